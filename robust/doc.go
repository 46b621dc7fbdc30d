// Package robust is uraid's robustness harness: the array's own serving code (package array, as
// the daemon runs it) in one process, over members that behave like drives with a volatile write
// cache (robust/simdisk), under a seeded random workload of reads, writes, discards and flushes
// beside membership changes, member errors, power losses, kills and clean stops; it checks the
// history for linearizability against a block model in which a discarded block may read as
// anything until rewritten, and reads every copy back. docs/robustness.md tells what it checks,
// what it found, and the defects it must find (internal/plant).
//
// It owns the workload, the fault schedule and the checks; it must not reach into the array's
// state beyond what the daemon does (its exported calls and the failpoints of
// internal/failpoint), or a finding could be the harness's own. Its tests run with
// URAID_ROBUST=1 as root where /dev/fuse is (make test-robust, make test-planted).
package robust
