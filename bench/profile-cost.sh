#!/bin/bash
# Where a uraid request's extra context switches come from (docs/benchmarks.md, scenario j):
# a RAID0 over four memory-backed null_blk members, fio 4 KiB random reads (QD1 by default, or
# the fio options given), and meanwhile each daemon thread's system call sampled from
# /proc/PID/task/TID/syscall (the call a sleeping thread sleeps in: 202 futex, 232/281
# epoll_wait, 35 nanosleep, 426 io_uring_enter), then each thread's switches and CPU, and the
# daemon's CPU profile handed to the host as base64. Run it with
#   tests/vm/vm run -m 3072 -- bench/profile-cost.sh [FIO OPTIONS...]
# after make bench-build (it needs jq). URAID_ENV adds to the daemon's environment; TRACE=1 takes
# an execution trace instead of the CPU profile (go tool trace -d=parsed reads it).
set -euo pipefail
tests/vm/vm modprobe null_blk nr_devices=4 memory_backed=1 gb=1
export URAID_RUN_DIR=/run/uraid HOME=/tmp
secs=8
fioargs=("$@")
[ ${#fioargs[@]} -gt 0 ] || fioargs=(--rw=randread --bs=4k --iodepth=1)
members=(/dev/nullb0 /dev/nullb1 /dev/nullb2 /dev/nullb3)
for m in "${members[@]}"; do dd if=/dev/zero of="$m" bs=1M count=300 oflag=direct status=none; done
# shellcheck disable=SC2086
what=(URAID_CPUPROFILE=/tmp/uraid.prof URAID_CPUPROFILE_SECONDS=$((secs + 3)))
[ "${TRACE:-}" = 1 ] && what=(URAID_TRACE=/tmp/uraid.prof URAID_TRACE_SECONDS=$((secs + 3)))
dev=$(env ${URAID_ENV:-} "${what[@]}" \
	build/uraid create prof --level 0 --chunk 512K --force "${members[@]}")
pid=$(build/uraid detail --json prof | jq .pid)
build/uraid detail --json prof | jq -c .cost
fio --name=w --filename="$dev" --ioengine=io_uring --direct=1 --size=256M --runtime=1 --time_based --rw=randread --bs=4k --iodepth=32 >/dev/null
snap() { for t in /proc/"$pid"/task/*; do echo "$(basename "$t") $(awk '{print $14 + $15}' "$t/stat") $(awk '/ctxt_switches/ {s += $2} END {print s}' "$t/status")"; done; }
snap >/tmp/before
fio --name=p --filename="$dev" --ioengine=io_uring --direct=1 --size=256M --runtime=$secs --time_based "${fioargs[@]}" \
	--output-format=json | sed -n '/^{/,$p' | jq -r '.jobs[0] | (.read, .write) | select(.total_ios > 0) | "\(.total_ios) ios \(.iops | floor) iops"' >/tmp/fio &
fiopid=$!
: >/tmp/samples
while kill -0 $fiopid 2>/dev/null; do
	for t in /proc/"$pid"/task/*; do echo "$(basename "$t") $(cut -d' ' -f1 "$t/syscall" 2>/dev/null)"; done >>/tmp/samples
	sleep 0.2
done
wait $fiopid
snap >/tmp/after
cat /tmp/fio
build/uraid detail --json prof | jq -c .cost
echo "tid cpu_ticks switches: syscall samples (number:count)"
join /tmp/before /tmp/after | while read -r tid c0 s0 c1 s1; do
	echo "$tid $((c1 - c0)) $((s1 - s0)): $(awk -v t="$tid" '$1 == t {n[$2]++} END {for (k in n) printf "%s:%d ", k, n[k]}' /tmp/samples)"
done
sleep 4
build/uraid stop prof
echo "=== profile begin"
base64 /tmp/uraid.prof.* 2>/dev/null || true
echo "=== profile end"
