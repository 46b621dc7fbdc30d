package main

import "uraid/raid"

func createOnly(paths []string) ([]*raid.Member, []*raid.Superblock, error) {
	return raid.Create(raid.CreateOptions{Name: "arr", Level: raid.LevelRAID1, Members: paths})
}
