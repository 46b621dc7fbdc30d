#!/bin/bash
# Runs benchrun inside the tests/vm/vm guest: loads the md personalities the
# suite compares against and brd and keeps uraid's run directory on the guest's /run.
set -e
tests/vm/vm modprobe raid0
tests/vm/vm modprobe raid10
# Scenario (e)'s kernel-native members: four RAM disks of 256 MiB.
tests/vm/vm modprobe brd rd_nr=4 rd_size=262144
export URAID_RUN_DIR=/run/uraid
exec build/benchrun "$@"
