package uring

import (
	"os"
	"testing"
)

func tempFile(t testing.TB) (*os.File, error) {
	f, err := os.CreateTemp(t.TempDir(), "ring")
	if err == nil {
		t.Cleanup(func() { f.Close() })
	}
	return f, err
}
