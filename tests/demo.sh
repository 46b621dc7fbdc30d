#!/usr/bin/env bash
# The main job, end to end: a RAID10 over four sparse files, ext4 mounted with -o discard, files
# written and deleted, and the discards that reach the members shown by `uraid detail`.
set -euo pipefail
URAID=${URAID:-$(dirname "$0")/../build/uraid}
dir=${DEMO_DIR:-/var/lib/uraid/demo}
mnt=$(mktemp -d)
export URAID_RUN_DIR=${URAID_RUN_DIR:-/run/uraid}

cleanup() {
	mountpoint -q "$mnt" && umount "$mnt"
	"$URAID" stop demo 2>/dev/null || true
	rmdir "$mnt"
}
trap cleanup EXIT

step() { printf '\n$ %s\n' "$*"; "$@"; }

rm -rf "$dir"
step "$URAID" create demo --level 10 --size 1G --discard async "$dir"/m0 "$dir"/m1 "$dir"/m2 "$dir"/m3
dev=$("$URAID" list | awk '$1 == "demo" {print $2}')
step mkfs.ext4 -q -E nodiscard "$dev"
step mount -o discard "$dev" "$mnt"
echo
echo "# 200 files of 1 MiB, then sync"
for i in $(seq 1 200); do head -c 1M /dev/urandom >"$mnt/f$i"; done
sync
step du -sh --apparent-size "$dir"
step du -sh "$dir"
step "$URAID" detail demo
echo
echo "# delete every file; ext4 -o discard sends the freed extents as discards"
rm -f "$mnt"/f*
sync
sleep 2
step "$URAID" status
step "$URAID" detail demo
step du -sh "$dir"
step umount "$mnt"
step "$URAID" stop demo
step "$URAID" examine "$dir"/m0
