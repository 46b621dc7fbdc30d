#!/bin/bash
# Profiles uraid's data path in the tests/vm/vm guest: four fast simulated
# SSDs, a RAID10 of 512 KiB chunks, fio 4 KiB random reads at QD32 (or the
# fio options given as arguments), a CPU profile of the serving daemon over
# the fio run, then where the time went: pprof's top functions and the CPU
# time of every process. Run it with
#   tests/vm/vm run -m 3072 -- bench/profile.sh [FIO OPTIONS...]
# after make bench-build.
. bench/profile-lib.sh
secs=15
fioargs=("$@")
[ ${#fioargs[@]} -gt 0 ] || fioargs=(--rw=randread --bs=4k --iodepth=32)
start_members "" "" "" ""

run_fio() {
	fio --name=p --filename="$1" --ioengine=io_uring --direct=1 --size=256M --runtime=$secs --time_based \
		"${fioargs[@]}" --output-format=terse --terse-version=3 | awk -F';' '{printf "read %s iops, write %s iops\n", $8, $49}'
}

echo "== md raid10"
run_fio "$(md_create)"
cpu
md_remove

echo "== uraid raid10"
dev=$(URAID_CPUPROFILE=/tmp/uraid.prof URAID_CPUPROFILE_SECONDS=$((secs + 3)) \
	$B/uraid create prof --level 10 --chunk 512K --force "${members[@]}")
run_fio "$dev"
cpu
sleep 5
finish
