#!/bin/bash
# Profiles scenario (f) without its fstrim, the plain I/O of a RAID10 whose
# member 0 is SATA-like (one command at a time, 100 ms per TRIM) and the
# other three fast: fio 4 KiB random read/write 50/50 at QD8 on the raw
# array for 15 s, md first, then uraid --discard async --trim-exclusive
# member 0 with the daemon's CPU profile. Prints each side's IOPS and p99,
# how many reads and writes every member completed (from its /sys/block
# stat), each process's CPU time, and the profile as base64 (decode as
# bench/profile-lib.sh says). Run it with
#   tests/vm/vm run -m 3072 -- bench/profile-f.sh
# after make bench-build.
command -v jq >/dev/null || { echo "profile-f.sh: needs jq (apt-get install jq)" >&2; exit 2; }
. bench/profile-lib.sh
secs=15
start_members "--exclusive --trim-latency 100ms" "" "" ""
# counts prints the reads and writes each member completed.
counts() { for m in "${members[@]}"; do awk '{printf "%s ", $1 "/" $5}' "/sys/class/block/$(basename "$m")/stat"; done; }
run() {
	local before after
	before=$(counts)
	fio --ioengine=io_uring --direct=1 --output-format=json --name=io --filename="$1" --rw=randrw --rwmixread=50 --bs=4k \
		--iodepth=8 --size=32M --runtime=$secs --time_based --ramp_time=2 |
		jq -r '.jobs[0] | "read \(.read.iops | floor) iops p99 \(.read.clat_ns.percentile."99.000000"/1000) us, write \(.write.iops | floor) iops p99 \(.write.clat_ns.percentile."99.000000"/1000) us"'
	after=$(counts)
	echo "member reads/writes completed before: $before"
	echo "member reads/writes completed after:  $after"
}
echo "== md raid10"
run "$(md_create)"
cpu
md_remove
echo "== uraid raid10 async, member 0 --trim-exclusive"
dev=$(URAID_CPUPROFILE=/tmp/uraid.prof URAID_CPUPROFILE_SECONDS=$((secs + 6)) \
	$B/uraid create prof --level 10 --chunk 512K --discard async --trim-exclusive "${members[0]}" --force "${members[@]}")
run "$dev"
cpu
sleep 5
finish
