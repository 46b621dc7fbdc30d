package filetarget

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// limits are the queue limits of a block device that shape its discard.
type limits struct {
	discardGranularity uint64
	discardMax         uint64
}

// queueLimits reads the discard limits from sysfs. A partition has no
// queue directory of its own and shares its disk's. Missing files read as
// zero: no discard.
func queueLimits(major, minor uint32) limits {
	base := fmt.Sprintf("/sys/dev/block/%d:%d", major, minor)
	for _, dir := range []string{base + "/queue", base + "/../queue"} {
		g, err := readUint(dir + "/discard_granularity")
		if err != nil {
			continue
		}
		m, _ := readUint(dir + "/discard_max_bytes")
		return limits{discardGranularity: g, discardMax: m}
	}
	return limits{}
}

func readUint(path string) (uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
}
