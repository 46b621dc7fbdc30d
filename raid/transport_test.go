package raid

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"golang.org/x/sys/unix"
)

func TestOnATA(t *testing.T) {
	tests := []struct {
		name string
		path string
		want bool
	}{
		{"ahci disk", "/sys/devices/pci0000:00/0000:00:1f.2/ata1/host0/target0:0:0/0:0:0:0/block/sda", true},
		{"ahci partition", "/sys/devices/pci0000:00/0000:00:1f.2/ata3/host2/target2:0:0/2:0:0:0/block/sdc/sdc1", true},
		{"two-digit port", "/sys/devices/pci0000:00/0000:00:17.0/ata12/host11/target11:0:0/11:0:0:0/block/sdl", true},
		{"port behind a bridge", "/sys/devices/pci0000:00/0000:00:01.1/0000:02:00.0/ata7/host6/target6:0:0/6:0:0:0/block/sdf", true},
		{"nvme", "/sys/devices/pci0000:00/0000:00:1d.0/0000:3d:00.0/nvme/nvme0/nvme0n1", false},
		{"nvme partition", "/sys/devices/pci0000:00/0000:00:1d.0/0000:3d:00.0/nvme/nvme0/nvme0n1/nvme0n1p2", false},
		{"virtio", "/sys/devices/pci0000:00/0000:00:02.0/virtio1/block/vda", false},
		{"ublk", "/sys/devices/virtual/block/ublkb0", false},
		{"loop", "/sys/devices/virtual/block/loop0", false},
		{"usb bridge", "/sys/devices/pci0000:00/0000:00:14.0/usb2/2-1/2-1:1.0/host4/target4:0:0/4:0:0:0/block/sdd", false},
		{"sas hba", "/sys/devices/pci0000:00/0000:00:03.0/0000:05:00.0/host0/port-0:0/end_device-0:0/target0:0:0/0:0:0:0/block/sda", false},
		{"ata without a number", "/sys/devices/platform/ata/block/sda", false},
		{"ata with more than digits", "/sys/devices/platform/ata1x/block/sda", false},
		{"ata inside a name", "/sys/devices/platform/pata1/block/sda", false},
		{"ata as a device name", "/sys/devices/virtual/block/ata2x", false},
		{"empty", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, onATA(tt.path), tt.path)
		})
	}
}

// TestProbeATAUnresolved checks that a device sysfs does not know is taken as not on ATA rather
// than failing: the probe only refines defaults.
func TestProbeATAUnresolved(t *testing.T) {
	assert.False(t, probeATA(unix.Mkdev(4095, 1048575)))
}
