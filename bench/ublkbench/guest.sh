#!/bin/bash
# Runs ublkbench in the tests/vm/vm guest over one of three backing stores:
#   tmpfs   a file on the guest's /tmp (RAM)
#   ext4    a file on ext4 made on a brd RAM disk: a filesystem over a block
#           device, as on an SSD; it takes io_uring's non-blocking direct
#           reads inline, which tmpfs cannot (see docs/bench-ublk.md)
#   brd     the brd RAM disk itself: a block device, as uraid's members are,
#           with no filesystem between the targets and the memory
# Usage: tests/vm/vm run -m 3072 -- bench/ublkbench/guest.sh BACKING [ublkbench run flags...]
set -euo pipefail
bin=${UBLKBENCH:-build/ublkbench/ublkbench}
backing=${1:?usage: guest.sh tmpfs|ext4|brd [flags...]}
shift
case $backing in
tmpfs)
	exec "$bin" run -file /tmp/ublkbench.img "$@"
	;;
brd)
	tests/vm/vm modprobe brd rd_nr=1 rd_size=$((1024 * 1024)) max_part=0
	exec "$bin" run -file /dev/ram0 "$@"
	;;
ext4)
	mnt=/tmp/ublkbench-ext4
	# 1.25 GiB of RAM disk holds the 1 GiB file and ext4's metadata.
	tests/vm/vm modprobe brd rd_nr=1 rd_size=$((1280 * 1024)) max_part=0
	mkfs.ext4 -q -F -E nodiscard,lazy_itable_init=0,lazy_journal_init=0 /dev/ram0
	mkdir -p $mnt
	mount -o noatime /dev/ram0 $mnt
	trap 'umount $mnt' EXIT
	"$bin" run -file $mnt/ublkbench.img "$@"
	;;
*)
	echo "guest.sh: backing $backing is not tmpfs, ext4 or brd" >&2
	exit 2
	;;
esac
