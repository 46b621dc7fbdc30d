#!/bin/bash
# Profiles uraid's data path on kernel-native members in the tests/vm/vm
# guest: four brd RAM disks, a RAID10 of 512 KiB chunks, fio (4 KiB random
# reads at QD1, or the fio options given as arguments) on md, on uraid as it
# runs by default (zero copy where the kernel has it) and on uraid forced to
# copy, each twice and alternating; then the kernel's own counters for each
# run (context switches of the daemon, io_uring worker threads, the
# members' I/O counts) and a CPU profile of the default uraid's second run.
# Run it with
#   tests/vm/vm run -m 3072 -- bench/profile-native.sh [FIO OPTIONS...]
# after make bench-build (it needs jq).
set -euo pipefail
tests/vm/vm modprobe raid10
tests/vm/vm modprobe brd rd_nr=4 rd_size=262144
export URAID_RUN_DIR=/run/uraid HOME=/tmp
secs=10
fioargs=("$@")
[ ${#fioargs[@]} -gt 0 ] || fioargs=(--rw=randread --bs=4k --iodepth=1)
members=(/dev/ram0 /dev/ram1 /dev/ram2 /dev/ram3)
for m in "${members[@]}"; do dd if=/dev/zero of="$m" bs=1M oflag=direct status=none 2>/dev/null || true; done

run_fio() {
	fio --name=p --filename="$1" --ioengine=io_uring --direct=1 --size=256M --runtime=$secs --time_based \
		--ramp_time=2 --lat_percentiles=1 "${fioargs[@]}" --output-format=json |
		sed -n '/^{/,$p' | jq -r '.jobs[0] | (.read, .write) | select(.total_ios > 0) |
			"\(.iops | floor) iops \(.bw / 1024 | floor) MiB/s lat p50 \(.lat_ns.percentile["50.000000"] / 1000 | floor) us p99 \(.lat_ns.percentile["99.000000"] / 1000 | floor) us"'
}

counters() { # $1: daemon pid or empty
	for m in "${members[@]}"; do printf '%s ' "$(basename "$m"):$(awk '{print $1 "r/" $5 "w"}' /sys/block/"$(basename "$m")"/stat)"; done
	echo
	if [ -n "$1" ]; then
		grep -E 'ctxt_switches' /proc/"$1"/status | tr -s ' \t' ' ' | tr '\n' ' '
		echo "threads $(ls /proc/"$1"/task | wc -l), io_uring workers $(cat /proc/"$1"/task/*/comm | grep -c '^iou-wrk' || true)"
		# CPU of each thread since the daemon started, user+system in clock ticks, the busiest first:
		# the queue threads, the Go runtime's, and io_uring's workers (iou-wrk), which run member I/O
		# the kernel could not issue inline.
		for t in /proc/"$1"/task/*; do
			echo "$(awk '{print $14 + $15}' "$t/stat") $(cat "$t/comm")"
		done | sort -rn | awk '$1 > 0' | head -8 | tr '\n' ',' | sed 's/,$/\n/'
		ps -o time=,comm= -p "$1"
	fi
}

md() {
	echo "== md raid10 (run $1)"
	mdadm --create /dev/md/prof --run --assume-clean --level=10 --raid-devices=4 --chunk=512 --metadata=1.2 \
		"${members[@]}" >/dev/null 2>&1
	run_fio "$(readlink -f /dev/md/prof)"
	counters ""
	mdadm --stop /dev/md/prof >/dev/null 2>&1
	mdadm --zero-superblock "${members[@]}"
}

uraid() { # $1 run, $2 zero copy mode, $3 profile or not
	echo "== uraid raid10, URAID_ZERO_COPY=$2 (run $1)"
	local env=(URAID_ZERO_COPY="$2")
	[ "$3" = yes ] && env+=(URAID_CPUPROFILE=/tmp/uraid.prof URAID_CPUPROFILE_SECONDS=$((secs + 4)))
	dev=$(env "${env[@]}" build/uraid create prof --level 10 --chunk 512K --force "${members[@]}")
	build/uraid detail prof | grep 'Zero Copy'
	pid=$(build/uraid detail --json prof | jq .pid)
	run_fio "$dev"
	counters "$pid"
	[ "$3" = yes ] && sleep 4
	build/uraid stop prof
}

for run in 1 2; do
	md $run
	uraid $run auto $([ $run = 2 ] && echo yes || echo no)
	uraid $run off no
done
# Hand the profile to the host, where
#   sed -n '/^=== profile begin/,/^=== profile end/{//!p}' LOG | base64 -d >prof
#   go tool pprof -top build/uraid prof
# reads it.
echo "=== profile begin"
base64 /tmp/uraid.prof.* 2>/dev/null || true
echo "=== profile end"
