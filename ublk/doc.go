// Package ublk serves a Target as a Linux block device, /dev/ublkbN, through the
// kernel's ublk driver (ublk_drv, Linux 6.12 or later).
//
// A Device is created from a Target and Options, started with Start and
// stopped with Stop. Start adds the device, sets its parameters from the
// Target, starts one queue goroutine per hardware queue and returns once the
// block device node exists. Stop removes the block device while the queues
// still serve, so no acknowledged I/O is lost, then releases every kernel
// object in the order the driver requires.
//
// # Requests
//
// Every queue goroutine owns its io_uring and its thread (the driver binds a
// queue to the thread that fetched its first request). It decodes each
// request the kernel hands it into the tag's Request and calls Target.Serve.
// Serve must not block: it starts the work and returns. The request is
// finished later, from any goroutine, with Request.Complete or Request.Done;
// a slow request therefore never holds up the other tags of its queue.
// Completing from another goroutine wakes the queue through an eventfd the
// queue keeps polled on its ring. Neither path allocates.
//
// A Target that implements RingTarget may also submit its own I/O (reads,
// writes, fsync, fallocate, block discards) on the queue's ring from inside
// Serve or Reap; those completions come back to Reap on the queue goroutine
// and never cross a thread. This is the fast path for file and member I/O.
// A Resumer may also park a request it cannot go on with yet (it waits for
// something another goroutine will finish) and later call Request.Resume
// from anywhere: the queue goroutine then calls its Resume method, where
// it prepares ring I/O as in Serve. A request that waits costs neither a
// goroutine nor a blocked queue.
//
// # Zero copy
//
// Where the kernel can lend the request's pages to the queue ring
// (UBLK_F_AUTO_BUF_REG, 6.16; UBLK_F_SUPPORT_ZERO_COPY, 6.15), a RingTarget
// that reaches request data only through Request.PrepReadInto and
// PrepWriteFrom is served without a copy: those become fixed-buffer I/O on
// the slot of the request's tag, and no buffer is mapped for the data, so
// Request.Buf is nil. Elsewhere, or for a target that reads or writes the
// bytes itself (ByteTarget), the driver copies through per-tag buffers.
// Options.ZeroCopy can force either; Device.ZeroCopy says what was chosen
// and why.
//
// # Cleanup and recovery
//
// A server that is killed leaves its device behind: RemoveOrphan and
// RemoveOrphans delete devices whose server process is dead, unless they
// are open. With Options.UserRecovery the device instead survives,
// quiesced, and NewRecovery takes it over under the same number. A queue
// that stops serving on its own (Failed) keeps its ring and thread until
// the device is stopped or abandoned, or the process exits: a server that
// leaves a failed device to a successor Settles it and exits, so that the
// driver sees every queue go at once. A server that hands its device over to a successor on purpose first Drains it (the
// target finishes what it holds, new requests wait) and then Abandons it
// (its queues close without a stop). StopUnused is the stop that refuses
// while anything has the block device open. Harness drives a Target
// through the queue code without the driver, for tests on any kernel.
//
// # Concurrency
//
// Device.Start, Stop, StopUnused, Drain, EndDrain, Settle and Abandon may
// be called from any goroutine; Stop is idempotent and may run concurrently
// with Start's return or with itself.
// Request.Complete and Request.Done are safe from any goroutine, once per
// request; Request.Resume once per park. The Prep methods of Request are for
// the queue goroutine only: call them inside Serve, Reap or Resume. With
// URAID_VERIFY=1 the queue checks its per-tag bookkeeping after every batch
// and panics on a request completed twice (otherwise the second completion
// is dropped).
//
// ublk owns the conversation with the kernel driver and nothing of what a
// request means: it never maps, retries or reorders a request, and it never
// logs; what a Target does with a request is the Target's.
package ublk
