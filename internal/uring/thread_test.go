package uring

import (
	"os"
	"os/signal"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"uraid/internal/uapi"
)

// TestWaitRestartsAfterSignals blocks a ring in SubmitAndWait on a poll of
// an empty pipe while another goroutine bombards the waiting thread with
// signals; the wait must absorb the EINTRs and return only when the pipe
// becomes readable.
func TestWaitRestartsAfterSignals(t *testing.T) {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, unix.SIGUSR1)
	defer signal.Stop(sigs)

	var p [2]int
	require.NoError(t, unix.Pipe2(p[:], unix.O_CLOEXEC))
	defer unix.Close(p[0])
	defer unix.Close(p[1])

	type outcome struct {
		res   int32
		eintr uint64
		err   error
	}
	tids := make(chan int, 1)
	done := make(chan outcome, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		r, err := New(4)
		if err != nil {
			tids <- -1
			done <- outcome{err: err}
			return
		}
		defer r.Close()
		sqe := r.NextSQE()
		PrepPollAdd(sqe, p[0], unix.POLLIN)
		sqe.UserData = 42
		tids <- unix.Gettid()
		res, err := r.SubmitAndWaitOne()
		done <- outcome{res: res, eintr: r.eintr, err: err}
	}()

	tid := <-tids
	require.Positive(t, tid)
	stop := time.After(200 * time.Millisecond)
signalling:
	for {
		select {
		case <-stop:
			break signalling
		case o := <-done:
			t.Fatalf("wait returned before the pipe was written: %+v", o)
		default:
			require.NoError(t, unix.Tgkill(unix.Getpid(), tid, unix.SIGUSR1))
			time.Sleep(2 * time.Millisecond)
		}
	}
	_, err := unix.Write(p[1], []byte{1})
	require.NoError(t, err)
	o := <-done
	require.NoError(t, o.err)
	assert.Equal(t, int32(unix.POLLIN), o.res&unix.POLLIN)
	assert.Positive(t, o.eintr, "the signals interrupted the wait at least once")
	t.Logf("wait restarted %d times", o.eintr)
}

// TestLockedThreadSingleIssuer runs a SINGLE_ISSUER|DEFER_TASKRUN ring the
// way a ublk queue does: created and driven by one goroutine locked to its
// thread. It also pins down the rule that makes the lock necessary: the
// same ring entered from another thread is refused.
func TestLockedThreadSingleIssuer(t *testing.T) {
	ringCh := make(chan *Ring)
	release := make(chan struct{})
	errs := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		r, err := New(8, WithFlags(uapi.IORING_SETUP_SINGLE_ISSUER|uapi.IORING_SETUP_DEFER_TASKRUN))
		if err != nil {
			errs <- err
			close(ringCh)
			return
		}
		defer r.Close()
		for round := range 50 {
			for i := range 8 {
				sqe := r.NextSQE()
				PrepNop(sqe)
				sqe.UserData = uint64(round*8 + i)
			}
			if _, err := r.SubmitAndWait(8); err != nil {
				errs <- err
				close(ringCh)
				return
			}
			if n := r.ForEachCQE(func(*uapi.CQE) {}); n != 8 {
				errs <- assert.AnError
				close(ringCh)
				return
			}
		}
		ringCh <- r
		<-release
		errs <- nil
	}()

	r, ok := <-ringCh
	if !ok {
		require.NoError(t, <-errs)
	}
	// Another goroutine on another thread: the kernel refuses it.
	other := make(chan error)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		PrepNop(r.NextSQE())
		_, err := r.Submit()
		other <- err
	}()
	assert.ErrorIs(t, <-other, unix.EEXIST)
	close(release)
	require.NoError(t, <-errs)
}

func TestWakerWakesBlockedRing(t *testing.T) {
	w, err := NewWaker()
	require.NoError(t, err)
	defer w.Close()

	const rounds = 5
	woken := make(chan time.Duration, rounds)
	failed := make(chan error, 1)
	armed := make(chan struct{}, rounds)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		r, err := New(4)
		if err != nil {
			failed <- err
			return
		}
		defer r.Close()
		for range rounds {
			w.ArmPoll(r.NextSQE(), 9)
			if _, err := r.Submit(); err != nil {
				failed <- err
				return
			}
			armed <- struct{}{}
			start := time.Now()
			res, err := r.SubmitAndWaitOne()
			if err != nil || res&unix.POLLIN == 0 {
				failed <- assert.AnError
				return
			}
			woken <- time.Since(start)
			if err := w.Drain(); err != nil {
				failed <- err
				return
			}
		}
	}()
	for range rounds {
		select {
		case <-armed:
		case err := <-failed:
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
		require.NoError(t, w.Wake())
		select {
		case d := <-woken:
			assert.GreaterOrEqual(t, d, 5*time.Millisecond, "the ring really was blocked")
		case err := <-failed:
			t.Fatal(err)
		case <-time.After(5 * time.Second):
			t.Fatal("Wake did not wake the ring")
		}
	}
	wg.Wait()
}

func TestRegisterEventfdSignalsCompletions(t *testing.T) {
	r := newRing(t, 4)
	w, err := NewWaker()
	require.NoError(t, err)
	defer w.Close()
	require.NoError(t, r.RegisterEventfd(w.Fd()))

	var v [8]byte
	_, err = unix.Read(w.Fd(), v[:])
	assert.ErrorIs(t, err, unix.EAGAIN, "nothing signalled yet")

	PrepNop(r.NextSQE())
	_, err = r.SubmitAndWait(1)
	require.NoError(t, err)
	n, err := unix.Read(w.Fd(), v[:])
	require.NoError(t, err)
	assert.Equal(t, 8, n)

	require.NoError(t, r.UnregisterEventfd())
	PrepNop(r.NextSQE())
	_, err = r.SubmitAndWait(2)
	require.NoError(t, err)
	_, err = unix.Read(w.Fd(), v[:])
	assert.ErrorIs(t, err, unix.EAGAIN, "unregistered: no signal")
}

func TestSubmitAndWaitTimeout(t *testing.T) {
	r := newRing(t, 4)
	start := time.Now()
	_, err := r.SubmitAndWaitTimeout(1, 30*time.Millisecond)
	assert.ErrorIs(t, err, unix.ETIME)
	assert.GreaterOrEqual(t, time.Since(start), 30*time.Millisecond)

	PrepNop(r.NextSQE())
	_, err = r.SubmitAndWaitTimeout(1, time.Second)
	require.NoError(t, err)
	assert.Equal(t, 1, r.ForEachCQE(func(*uapi.CQE) {}))
}

func TestWakerCoalescesAndDrains(t *testing.T) {
	w, err := NewWaker()
	require.NoError(t, err)
	for range 3 {
		require.NoError(t, w.Wake())
	}
	r := newRing(t, 2)
	w.ArmPoll(r.NextSQE(), 1)
	res, err := r.SubmitAndWaitOne()
	require.NoError(t, err)
	assert.NotZero(t, res&unix.POLLIN, "pending wakes make the poll fire at once")

	require.NoError(t, w.Drain())
	var v [8]byte
	_, err = unix.Read(w.Fd(), v[:])
	assert.ErrorIs(t, err, unix.EAGAIN, "one drain consumes every wake")
	require.NoError(t, w.Drain(), "draining an empty waker is harmless")

	require.NoError(t, w.Close())
	require.NoError(t, w.Close())
}
