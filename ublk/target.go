package ublk

// Target is what a Device serves: it describes the block device and does the
// I/O of each request.
type Target interface {
	// Params describes the block device. It is called once, by New.
	Params() Params

	// Serve starts r and returns without waiting for it: it runs on the
	// queue goroutine, and while it runs no other request of that queue is
	// dispatched or committed. The request is finished later, exactly once,
	// with r.Complete or r.Done, from any goroutine. Until then r and its
	// Buf belong to the target; afterwards the target must not touch them.
	Serve(r *Request)
}

// RingTarget is a Target that also submits I/O on the queue's own io_uring
// through the Request.Prep* methods. Every completion of such I/O is handed
// to Reap, on the queue goroutine, with the request and the sub value given
// when the I/O was prepared. Reap may prepare more I/O and may complete r.
type RingTarget interface {
	Target
	Reap(r *Request, sub uint32, res int32)
}

// Resumer is a RingTarget that parks requests: it returns from Serve (or
// Reap) holding a request it cannot go on with yet, and once it can, calls
// r.Resume from any goroutine; the queue goroutine then calls Resume(r),
// where the target may prepare ring I/O and complete r as in Serve.
type Resumer interface {
	RingTarget
	Resume(r *Request)
}
