package main

import (
	"encoding/json"
	"os"
	"path/filepath"

	"uraid/bench"
)

func writeJSON(path string, s *bench.Suite) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
