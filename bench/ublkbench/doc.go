// Package ublkbench measures the ublk file target against the kernel loop
// device over the same backing file, in the same guest run, so that the
// cost of serving a block device from userspace through ublk can be read
// as one ratio per workload.
//
// The measuring half (Run) needs root, fio, ublk_drv and loop; it prints
// every fio result and the summary as marked JSON lines on its output. The
// pure half (ParseFio, Summarize, ParseLog, Table) turns fio's JSON into
// results, results into medians and ublk/loop ratios, and a console log
// back into a Report; it is tested on any host.
//
// Nothing here is safe for concurrent use; a benchmark run is one sequence
// of fio invocations.
package ublkbench
