package main

import (
	"uraid/mapping"
	"uraid/raid"
)

func createOnly(paths []string) ([]*raid.Member, []*raid.Superblock, error) {
	return raid.Create(raid.CreateOptions{Name: "arr", Level: mapping.RAID1, Members: paths})
}
