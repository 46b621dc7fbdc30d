#!/bin/bash
# Profiles scenario (d) in the tests/vm/vm guest: four typical simulated SSDs,
# a RAID10 of 512 KiB chunks, fio 4 KiB random reads at QD4 over the first
# half for 12 s alone and 12 s beside 20 1 MiB discards a second over the
# second half; md first, then uraid --discard async with the daemon's CPU
# profile. Prints read p99 and IOPS, each process's CPU time and the profile
# as base64 (decode as bench/profile-lib.sh says). Run it with
#   tests/vm/vm run -m 3072 -- bench/profile-d.sh
# after make bench-build.
command -v jq >/dev/null || { echo "profile-d.sh: needs jq (apt-get install jq)" >&2; exit 2; }
. bench/profile-lib.sh
secs=12
typical="--trim-latency 2ms --b2b-latency 20ms --b2b-window 5ms --max-discard 32M"
start_members "$typical" "$typical" "$typical" "$typical"
run() {
	for trim in 0 1; do
		extra=()
		[ $trim = 1 ] && extra=(--name=t --filename="$1" --rw=randtrim --bs=1M --offset=50% --size=50% --rate_iops=,,20 --runtime=$secs --time_based --ramp_time=2)
		fio --ioengine=io_uring --direct=1 --output-format=json --name=r --filename="$1" --rw=randread --bs=4k --iodepth=4 --offset=0 --size=50% \
			--runtime=$secs --time_based --ramp_time=2 "${extra[@]}" | jq -r '.jobs[] | select(.jobname=="r") | "trim='$trim' read p99 \(.read.clat_ns.percentile."99.000000"/1000) us iops \(.read.iops)"'
	done
}
echo "== md raid10"
run "$(md_create)"
cpu
md_remove
echo "== uraid raid10 async"
dev=$(URAID_CPUPROFILE=/tmp/uraid.prof URAID_CPUPROFILE_SECONDS=$((2*secs + 8)) \
	$B/uraid create prof --level 10 --chunk 512K --discard async --force "${members[@]}")
run "$dev"
cpu
sleep 6
finish
