// Package raidtest reads what package raid wrote on member files, for the tests of the packages
// that build on raid (array, daemon). Like testutil, it is for _test.go files only.
package raidtest

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"uraid/raid"
)

// Superblock reads the superblock of the member file at path, failing t when it has none. It
// opens the file plainly, without raid.OpenMember's lock: a running array holds that.
func Superblock(t testing.TB, path string) *raid.Superblock {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	sb, err := raid.ReadSuperblock(f)
	require.NoError(t, err)
	return sb
}
