package uring

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"uraid/internal/uapi"
)

func TestHotPathDoesNotAllocate(t *testing.T) {
	r := newRing(t, 8, WithSQE128())
	w, err := NewWaker()
	require.NoError(t, err)
	defer w.Close()
	buf := mmapBuf(t, block)
	f, _ := openDirect(t)
	fd := int(f.Fd())

	var sum uint64
	onCQE := func(c *uapi.CQE) { sum += c.UserData }
	tests := []struct {
		name string
		op   func()
	}{
		{"nop submit and ForEachCQE", func() {
			sqe := r.NextSQE()
			PrepNop(sqe)
			sqe.UserData = 1
			if _, err := r.SubmitAndWait(1); err != nil {
				panic(err)
			}
			r.ForEachCQE(onCQE)
		}},
		{"write submit and PeekCQE", func() {
			sqe := r.NextSQE()
			PrepWrite(sqe, fd, addr(buf), block, 0)
			res, err := r.SubmitAndWaitOne()
			if err != nil || res != block {
				panic(res)
			}
		}},
		{"uring_cmd on SQE128", func() {
			s := r.NextSQE128()
			PrepURingCmd(&s.SQE, fd, uapi.UBLK_U_IO_FETCH_REQ)
			*s.CtrlCmd() = uapi.CtrlCmd{DevID: 1, QueueID: 0xFFFF}
			if _, err := r.SubmitAndWait(1); err != nil {
				panic(err)
			}
			if c, ok := r.PeekCQE(); ok {
				sum += uint64(c.Res)
				r.CQESeen()
			}
		}},
		{"batch of eight", func() {
			for range 8 {
				PrepNop(r.NextSQE())
			}
			if _, err := r.SubmitAndWait(8); err != nil {
				panic(err)
			}
			r.ForEachCQE(onCQE)
		}},
		{"waker", func() {
			if err := w.Wake(); err != nil {
				panic(err)
			}
			if err := w.Drain(); err != nil {
				panic(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Zero(t, testing.AllocsPerRun(500, tt.op))
		})
	}
	assert.NotZero(t, sum, "the callbacks ran")
}

func BenchmarkNopRoundTrip(b *testing.B) {
	r := newRing(b, 64)
	b.ReportAllocs()
	for b.Loop() {
		sqe := r.NextSQE()
		PrepNop(sqe)
		if _, err := r.SubmitAndWait(1); err != nil {
			b.Fatal(err)
		}
		r.AdvanceCQ(1)
	}
}

func BenchmarkNopBatch32(b *testing.B) {
	r := newRing(b, 64)
	b.ReportAllocs()
	n := 0
	count := func(*uapi.CQE) { n++ }
	for b.Loop() {
		for range 32 {
			PrepNop(r.NextSQE())
		}
		if _, err := r.SubmitAndWait(32); err != nil {
			b.Fatal(err)
		}
		r.ForEachCQE(count)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/nop")
}
