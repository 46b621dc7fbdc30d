#!/bin/bash
# Profiles uraid's data path in the tests/vm/vm guest: four fast simulated
# SSDs, a RAID10 of 512 KiB chunks, fio 4 KiB random reads at QD32 (or the
# fio options given as arguments), a CPU profile of the serving daemon over
# the fio run, then where the time went: pprof's top functions and the CPU
# time of every process. Run it with
#   tests/vm/vm run -m 3072 -- bench/profile.sh [FIO OPTIONS...]
# after make bench-build.
set -euo pipefail
tests/vm/vm modprobe raid10
export URAID_RUN_DIR=/run/uraid HOME=/tmp GOCACHE=/tmp/gocache
secs=15
fioargs=("$@")
[ ${#fioargs[@]} -gt 0 ] || fioargs=(--rw=randread --bs=4k --iodepth=32)

members=()
for i in 0 1 2 3; do
	build/simssd --size 256M >/tmp/m$i 2>/dev/null &
done
for i in 0 1 2 3; do
	until [ -s /tmp/m$i ]; do sleep 0.1; done
	members+=("$(cat /tmp/m$i)")
done

cpu() { ps -eo comm,time,args --sort=-time | awk 'NR == 1 || /simssd|uraid|fio|md[0-9_]|kworker/' | head -15; }

run_fio() {
	fio --name=p --filename="$1" --ioengine=io_uring --direct=1 --size=256M --runtime=$secs --time_based \
		"${fioargs[@]}" --output-format=terse --terse-version=3 | awk -F';' '{printf "read %s iops, write %s iops\n", $8, $49}'
}

echo "== md raid10"
mdadm --create /dev/md/prof --run --assume-clean --level=10 --raid-devices=4 --chunk=512 --metadata=1.2 \
	"${members[@]}" 2>/dev/null
run_fio "$(readlink -f /dev/md/prof)"
cpu
mdadm --stop /dev/md/prof 2>/dev/null
mdadm --zero-superblock "${members[@]}"

echo "== uraid raid10"
dev=$(URAID_CPUPROFILE=/tmp/uraid.prof URAID_CPUPROFILE_SECONDS=$((secs + 3)) \
	build/uraid create prof --level 10 --chunk 512K --force "${members[@]}")
run_fio "$dev"
cpu
sleep 5
# pprof is built on demand and slow to build under emulation: hand the
# profile to the host instead, where
#   sed -n '/^=== profile begin/,/^=== profile end/{//!p}' LOG | base64 -d >prof
#   go tool pprof -top build/uraid prof
# reads it.
echo "=== profile begin"
base64 /tmp/uraid.prof.*
echo "=== profile end"
build/uraid stop prof
kill %1 %2 %3 %4 2>/dev/null || true
wait
