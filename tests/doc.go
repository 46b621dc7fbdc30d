// Package tests holds uraid's kernel-level tests: they need root and a kernel with ublk_drv, and
// drive the real thing (the ublk driver, mkfs.ext4, mount -o discard, fstrim, e2fsck, fio).
//
// They run in a guest through `make test-vm` (tests/vm/vm boots a 6.12 kernel under QEMU). Run
// anywhere else, they skip and say so; with URAID_E2E=1, which make test-vm sets, a test that cannot
// run fails instead, so CI never passes by skipping.
package tests
