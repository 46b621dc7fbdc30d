#!/bin/bash
# Runs benchrun inside the tests/vm/vm guest: loads the md personalities the
# suite compares against and brd and keeps uraid's run directory on the guest's /run.
set -e
tests/vm/vm modprobe raid0
tests/vm/vm modprobe raid10
# The kernel-native members of scenarios (e), (g) and (k): RAM disks of 256 MiB, four for (e),
# five for (g) (the fifth replaces a member), six for (k) (the array grows from four), which serve
# them through dm-linear.
tests/vm/vm modprobe brd rd_nr=6 rd_size=262144
tests/vm/vm modprobe dm_mod
# Scenario (i)'s NBD member; without the module (i) says so and skips.
tests/vm/vm modprobe nbd || echo "guest.sh: no nbd module: scenario (i) will skip" >&2
# The members of scenario (j): memory-backed null_blk, whose I/O costs next to nothing.
tests/vm/vm modprobe null_blk nr_devices=4 memory_backed=1 gb=1
export URAID_RUN_DIR=/run/uraid
exec "${BENCHRUN:-build/benchrun}" "$@"
