# shellcheck shell=bash
# Sourced by bench/profile.sh, profile-d.sh and profile-f.sh: the guest setup they share, their
# four simulated SSDs, the CPU table they print after each side, and the hand-over of the uraid
# daemon's CPU profile to the host, where
#   sed -n '/^=== profile begin/,/^=== profile end/{//!p}' LOG | base64 -d >prof
#   go tool pprof -top build/uraid prof
# reads it (pprof is slow to build under emulation, so the guest does not run it).
set -euo pipefail
tests/vm/vm modprobe raid10
export URAID_RUN_DIR=/run/uraid HOME=/tmp
B=build
members=()
member_pids=()
# A profile left by an earlier script in the same guest would be handed over instead of, or
# beside, this one's.
rm -f /tmp/uraid.prof.*

# start_members FLAGS...: one simssd of 256 MiB per argument, each argument that member's own
# flags as one word (split on spaces; "" for none), seeds 1, 2, ...; waits for their devices and
# puts them in members.
start_members() {
	local i=0 flags
	for flags in "$@"; do
		# shellcheck disable=SC2086 # the flags are split on purpose
		$B/simssd --size 256M --seed $((i + 1)) $flags >/tmp/m$i 2>/dev/null &
		member_pids+=($!)
		i=$((i + 1))
	done
	for ((i = 0; i < $#; i++)); do
		until [ -s /tmp/m$i ]; do sleep 0.1; done
		members+=("$(cat /tmp/m$i)")
	done
}

# cpu prints the CPU time of every process that takes part, the busiest first.
cpu() { ps -eo comm,time --sort=-time | awk 'NR == 1 || /simssd|uraid|fio|md[0-9_]|kworker|iou/' | head -12; }

# md_create and md_remove build md RAID10 over the members and take it apart again.
md_create() {
	mdadm --create /dev/md/prof --run --assume-clean --level=10 --raid-devices=4 --chunk=512 --metadata=1.2 \
		"${members[@]}" 2>/dev/null
	readlink -f /dev/md/prof
}
md_remove() {
	mdadm --stop /dev/md/prof 2>/dev/null
	mdadm --zero-superblock "${members[@]}"
}

# finish prints the daemon's profile (written once its seconds are up), stops the array and the
# members.
finish() {
	echo "=== profile begin"
	base64 /tmp/uraid.prof.*
	echo "=== profile end"
	$B/uraid stop prof
	kill "${member_pids[@]}" 2>/dev/null || true
	wait
}
