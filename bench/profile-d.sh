#!/bin/bash
# Profiles scenario (d) in the tests/vm/vm guest: four typical simulated SSDs,
# a RAID10 of 512 KiB chunks, fio 4 KiB random reads at QD4 over the first
# half for 12 s alone and 12 s beside 20 1 MiB discards a second over the
# second half; md first, then uraid --discard async with the daemon's CPU
# profile. Prints read p99 and IOPS, each process's CPU time and the profile
# as base64 (decode as bench/profile.sh says). Run it with
#   tests/vm/vm run -m 3072 -- bench/profile-d.sh
# after make bench-build.
set -euo pipefail
command -v jq >/dev/null || { echo "profile-d.sh: needs jq (apt-get install jq)" >&2; exit 2; }
tests/vm/vm modprobe raid10
export URAID_RUN_DIR=/run/uraid HOME=/tmp
B=build
secs=12
members=()
for i in 0 1 2 3; do
	$B/simssd --size 256M --seed $((i+1)) --trim-latency 2ms --b2b-latency 20ms --b2b-window 5ms --max-discard 32M >/tmp/m$i 2>/dev/null &
done
for i in 0 1 2 3; do until [ -s /tmp/m$i ]; do sleep 0.1; done; members+=("$(cat /tmp/m$i)"); done
cpu() { ps -eo comm,time --sort=-time | awk 'NR == 1 || /simssd|uraid|fio|md[0-9_]|kworker|iou/' | head -12; }
run() {
	for trim in 0 1; do
		extra=()
		[ $trim = 1 ] && extra=(--name=t --filename="$1" --rw=randtrim --bs=1M --offset=50% --size=50% --rate_iops=,,20 --runtime=$secs --time_based --ramp_time=2)
		fio --ioengine=io_uring --direct=1 --output-format=json --name=r --filename="$1" --rw=randread --bs=4k --iodepth=4 --offset=0 --size=50% \
			--runtime=$secs --time_based --ramp_time=2 "${extra[@]}" | jq -r '.jobs[] | select(.jobname=="r") | "trim='$trim' read p99 \(.read.clat_ns.percentile."99.000000"/1000) us iops \(.read.iops)"'
	done
}
echo "== md raid10"
mdadm --create /dev/md/prof --run --assume-clean --level=10 --raid-devices=4 --chunk=512 --metadata=1.2 "${members[@]}" 2>/dev/null
run "$(readlink -f /dev/md/prof)"
cpu
mdadm --stop /dev/md/prof 2>/dev/null
mdadm --zero-superblock "${members[@]}"
echo "== uraid raid10 async"
dev=$(URAID_CPUPROFILE=/tmp/uraid.prof URAID_CPUPROFILE_SECONDS=$((2*secs + 8)) \
	$B/uraid create prof --level 10 --chunk 512K --discard async --force "${members[@]}")
run "$dev"
cpu
sleep 6
echo "=== profile begin"
base64 /tmp/uraid.prof.*
echo "=== profile end"
$B/uraid stop prof
kill %1 %2 %3 %4 2>/dev/null || true
wait
