#!/bin/bash
# Profiles scenario (f) without its fstrim, the plain I/O of a RAID10 whose
# member 0 is SATA-like (one command at a time, 100 ms per TRIM) and the
# other three fast: fio 4 KiB random read/write 50/50 at QD8 on the raw
# array for 15 s, md first, then uraid --discard async --trim-exclusive
# member 0 with the daemon's CPU profile. Prints each side's IOPS and p99,
# how many reads and writes every member completed (from its /sys/block
# stat), each process's CPU time, and the profile as base64 (decode as
# bench/profile.sh says). Run it with
#   tests/vm/vm run -m 3072 -- bench/profile-f.sh
# after make bench-build.
set -euo pipefail
command -v jq >/dev/null || { echo "profile-f.sh: needs jq (apt-get install jq)" >&2; exit 2; }
tests/vm/vm modprobe raid10
export URAID_RUN_DIR=/run/uraid HOME=/tmp
B=build
secs=15
members=()
for i in 0 1 2 3; do
	slow=()
	[ $i = 0 ] && slow=(--exclusive --trim-latency 100ms)
	$B/simssd --size 256M --seed $((i+1)) "${slow[@]}" >/tmp/m$i 2>/dev/null &
done
for i in 0 1 2 3; do until [ -s /tmp/m$i ]; do sleep 0.1; done; members+=("$(cat /tmp/m$i)"); done
cpu() { ps -eo comm,time --sort=-time | awk 'NR == 1 || /simssd|uraid|fio|md[0-9_]|kworker|iou/' | head -12; }
# counts prints the reads and writes each member completed.
counts() { for m in "${members[@]}"; do awk '{printf "%s ", $1 "/" $5}' /sys/class/block/$(basename "$m")/stat; done; }
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
mdadm --create /dev/md/prof --run --assume-clean --level=10 --raid-devices=4 --chunk=512 --metadata=1.2 "${members[@]}" 2>/dev/null
run "$(readlink -f /dev/md/prof)"
cpu
mdadm --stop /dev/md/prof 2>/dev/null
mdadm --zero-superblock "${members[@]}"
echo "== uraid raid10 async, member 0 --trim-exclusive"
dev=$(URAID_CPUPROFILE=/tmp/uraid.prof URAID_CPUPROFILE_SECONDS=$((secs + 6)) \
	$B/uraid create prof --level 10 --chunk 512K --discard async --trim-exclusive "${members[0]}" --force "${members[@]}")
run "$dev"
cpu
sleep 5
echo "=== profile begin"
base64 /tmp/uraid.prof.*
echo "=== profile end"
$B/uraid stop prof
kill %1 %2 %3 %4 2>/dev/null || true
wait
