package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestSelected(t *testing.T) {
	for _, c := range []struct {
		list, name string
		want       bool
	}{
		{"", "c-fstrim", true},
		{"c", "c-fstrim", true},
		{"a, c", "c-fstrim", true},
		{"c-fstrim", "c-fstrim", true},
		{"a,b", "c-fstrim", false},
		{"fstrim", "c-fstrim", false},
	} {
		assert.Equal(t, c.want, selected(c.list, c.name), "%q in %q", c.name, c.list)
	}
}
