package bytesize

import (
	"fmt"
	"strconv"
)

var units = []struct {
	shift uint
	name  string
}{{50, "P"}, {40, "T"}, {30, "G"}, {20, "M"}, {10, "K"}}

// Format writes v in binary units (K is 1024 bytes): exactly, in the largest unit that keeps it
// whole in at most four digits ("512K", "2046M", "1G"); else with one decimal in the largest unit
// it reaches ("62.5M", "1.0G" for one byte over 1G); below 1K as bytes ("512 bytes", "1 byte",
// "0").
func Format(v int64) string {
	switch {
	case v == 0:
		return "0"
	case v == 1:
		return "1 byte"
	case v < 0 || v < 1<<10:
		return strconv.FormatInt(v, 10) + " bytes"
	}
	for _, u := range units {
		if v >= 1<<u.shift && v%(1<<u.shift) == 0 && v>>u.shift < 10000 {
			return strconv.FormatInt(v>>u.shift, 10) + u.name
		}
	}
	for _, u := range units {
		if v >= 1<<u.shift {
			return fmt.Sprintf("%.1f%s", float64(v)/float64(int64(1)<<u.shift), u.name)
		}
	}
	return strconv.FormatInt(v, 10) // not reached
}

// FormatRate writes a rate in bytes per second as Format does, with "/s".
func FormatRate(v int64) string { return Format(v) + "/s" }
