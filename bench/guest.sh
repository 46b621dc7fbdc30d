#!/bin/bash
# Runs benchrun inside the tests/vm/vm guest: loads the md personalities the
# suite compares against and keeps uraid's run directory on the guest's /run.
set -e
tests/vm/vm modprobe raid0
tests/vm/vm modprobe raid10
export URAID_RUN_DIR=/run/uraid
exec build/benchrun "$@"
