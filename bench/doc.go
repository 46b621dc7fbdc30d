// Package bench measures uraid against the kernel's md over the same
// simulated SSDs (cmd/simssd), scenario by scenario: full-device discard,
// small-file churn on ext4 -o discard, fstrim of a fragmented filesystem,
// read latency under a discard stream, raw IOPS and throughput, a RAID10
// with one slow SATA-like member, and replacing a member of a RAID10 that
// carries a filesystem (scenario (g), over brd RAM disks). (f), (h) and (i)
// also set uraid with no TRIM flag, learning each member, against uraid told
// what the drives are (--trim-exclusive, --trim-gap): a slow SATA-like
// member, a member with a back-to-back TRIM penalty, and a flood of small
// discards beside a reader with an NBD member served by nbdkit. (k) reshapes
// a RAID10 that carries a mounted filesystem from four members to six, online
// for both (md's --grow --raid-devices, uraid's grow --add, over brd RAM
// disks): time, bytes read and written against the live bytes, and the p99
// of reads of the files during the reshape against before it.
//
// Every scenario starts fresh members for every array it measures, so md
// and uraid see identical drives, and repeats each measurement; Results
// keep every repetition and the median. Only ratios taken side by side in
// one run mean anything: under emulation absolute figures are slow and
// noisy.
//
// The Runner shells out to simssd, uraid, mdadm, fio and mkfs.ext4 and must
// run as root on a kernel with ublk, md raid0 and raid10. A Runner is not
// safe for concurrent use. The report half (Suite, Ratios, Compare) is pure
// and is used on the host to turn the results into tables and plots.
//
// bench is a Go module of its own (bench/go.mod, uraid replaced by the tree
// above it), so that the plotting libraries the report draws with stay out
// of the product's go.mod; build and test it from bench/, as make
// bench-build and make test-unit do.
package bench
