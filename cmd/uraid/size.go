package main

import (
	"fmt"
	"strconv"
	"strings"

	"uraid/internal/bytesize"
)

// parseSize reads a byte count as mdadm and dd users write it: 4096, 512K, 64M, 1G, 2T, with an
// optional "iB" or "B" (all binary units).
func parseSize(s string) (int64, error) {
	t := strings.TrimSuffix(strings.TrimSuffix(strings.ToUpper(strings.TrimSpace(s)), "B"), "I")
	shift := 0
	if n := len(t); n > 0 {
		switch t[n-1] {
		case 'K':
			shift = 10
		case 'M':
			shift = 20
		case 'G':
			shift = 30
		case 'T':
			shift = 40
		}
		if shift > 0 {
			t = t[:n-1]
		}
	}
	v, err := strconv.ParseInt(t, 10, 64)
	if err != nil || v < 0 || v > (1<<62)>>shift {
		return 0, fmt.Errorf("size %q: use a whole number of bytes with an optional K, M, G or T suffix, e.g. 512K or 1G", s)
	}
	return v << shift, nil
}

// sizeFlag is a pflag.Value holding a byte count.
type sizeFlag int64

func (f *sizeFlag) String() string {
	if *f == 0 {
		return "0"
	}
	return bytesize.Format(int64(*f))
}

func (f *sizeFlag) Set(s string) error {
	v, err := parseSize(s)
	if err != nil {
		return err
	}
	*f = sizeFlag(v)
	return nil
}

func (f *sizeFlag) Type() string { return "size" }
