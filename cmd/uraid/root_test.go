package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestRootExitCodes(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want int
		out  string
	}{
		{"version", []string{"version"}, exitOK, "uraid "},
		{"unknown command", []string{"frobnicate"}, exitUsage, ""},
		{"unknown flag", []string{"version", "--bogus"}, exitUsage, ""},
		{"extra argument", []string{"version", "x"}, exitUsage, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			got := runWith(tt.args, &out, &bytes.Buffer{})
			assert.Equal(t, tt.want, got)
			assert.Contains(t, out.String(), tt.out)
		})
	}
}
