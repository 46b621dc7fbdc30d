package ublk

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"uraid/internal/uapi"
	"uraid/internal/uring"
)

func TestChooseMode(t *testing.T) {
	const (
		k612 = 0x1fe     // 6.12: neither
		k615 = 0x1fe | 1 // 6.15: explicit registration only
		k73  = 0x1fffff  // 7.3: both
		auto = 1 << 11   // automatic registration alone
	)
	ring, plain, bytes := &halvesTarget{}, &inlineTarget{}, &bytesTarget{}
	tests := []struct {
		name     string
		want     ZeroCopy
		t        Target
		features Features
		mode     dataMode
		reason   string
		flags    Features
	}{
		{"7.3 auto", ZeroCopyAuto, ring, k73, modeAutoReg, "", uapi.UBLK_F_AUTO_BUF_REG | uapi.UBLK_F_SUPPORT_ZERO_COPY},
		{"auto without explicit registration", ZeroCopyAuto, ring, auto, modeAutoReg, "", uapi.UBLK_F_AUTO_BUF_REG},
		{"6.15 auto", ZeroCopyAuto, ring, k615, modeRegister, "", uapi.UBLK_F_SUPPORT_ZERO_COPY},
		{"6.12 auto", ZeroCopyAuto, ring, k612, modeCopy, "kernel 6.12 lacks UBLK_F_AUTO_BUF_REG and UBLK_F_SUPPORT_ZERO_COPY", 0},
		{"7.3 register", ZeroCopyRegister, ring, k73, modeRegister, "", uapi.UBLK_F_SUPPORT_ZERO_COPY},
		{"6.12 register", ZeroCopyRegister, ring, k612, modeCopy, "lacks UBLK_F_SUPPORT_ZERO_COPY", 0},
		{"7.3 off", ZeroCopyOff, ring, k73, modeCopy, "turned off", 0},
		{"not a ring target", ZeroCopyAuto, plain, k73, modeCopy, "moves the data itself", 0},
		{"needs the bytes", ZeroCopyAuto, bytes, k73, modeCopy, "reads or writes the request's bytes", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, reason := chooseMode(tt.want, tt.t, tt.features, "6.12")
			assert.Equal(t, tt.mode, m)
			if tt.reason == "" {
				assert.Empty(t, reason)
			} else {
				assert.Contains(t, reason, tt.reason)
			}
			assert.Equal(t, tt.flags, modeFlags(m, tt.features))
			// A device created with these flags is recovered in the
			// same mode.
			assert.Equal(t, m, flagsMode(uint64(modeFlags(m, tt.features)|FeatureUserRecovery)))
		})
	}
}

func TestParseZeroCopy(t *testing.T) {
	for s, want := range map[string]ZeroCopy{"": ZeroCopyAuto, "auto": ZeroCopyAuto, "off": ZeroCopyOff, "register": ZeroCopyRegister} {
		got, err := ParseZeroCopy(s)
		require.NoError(t, err)
		assert.Equal(t, want, got)
		if s != "" {
			assert.Equal(t, s, got.String())
		}
	}
	_, err := ParseZeroCopy("on")
	assert.ErrorContains(t, err, "want auto, off or register")
	_, err = Options{ZeroCopy: 7}.withDefaults()
	assert.Error(t, err)
}

// halvesTarget moves every READ and WRITE as two member I/Os on one file,
// each half of the request, through the mode-neutral Prep calls; it
// records what it saw.
type halvesTarget struct {
	f       *os.File
	pending [8]int
	sawBuf  bool
	errs    []error
}

func (t *halvesTarget) Params() Params { return Params{Size: 1 << 20} }
func (t *halvesTarget) Serve(r *Request) {
	t.sawBuf = t.sawBuf || r.Buf != nil
	half := r.Length / 2
	t.pending[r.Tag] = 2
	for i, off := range []int64{0, half} {
		var err error
		if r.Op == OpRead {
			err = r.PrepReadInto(int(t.f.Fd()), off, half, r.Offset+off, uint32(i))
		} else {
			err = r.PrepWriteFrom(int(t.f.Fd()), off, half, r.Offset+off, r.FUA, uint32(i))
		}
		if err != nil {
			t.errs = append(t.errs, err)
			r.Done(err)
			return
		}
	}
}
func (t *halvesTarget) Reap(r *Request, sub uint32, res int32) {
	if res < 0 {
		r.Complete(res)
		return
	}
	if t.pending[r.Tag]--; t.pending[r.Tag] == 0 {
		r.Done(nil)
	}
}

type bytesTarget struct{ halvesTarget }

func (*bytesTarget) NeedsBytes() bool { return true }

// PrepReadInto and PrepWriteFrom move the same bytes whether the queue
// copies or uses fixed buffers; in zero-copy mode the target never sees a
// buffer, and the copy-mode calls say why they cannot work.
func TestZeroCopyHarnessMovesData(t *testing.T) {
	for _, zc := range []bool{false, true} {
		t.Run(map[bool]string{false: "copy", true: "zero copy"}[zc], func(t *testing.T) {
			f, err := os.CreateTemp(t.TempDir(), "backing")
			require.NoError(t, err)
			defer f.Close()
			require.NoError(t, f.Truncate(1<<20))
			target := &halvesTarget{f: f}
			h, err := newHarness(target, 0, 2, 64<<10, zc)
			if err != nil && zc {
				t.Skipf("cannot register fixed buffers here: %v", err)
			}
			require.NoError(t, err)
			defer h.Close()
			require.Equal(t, zc, h.ZeroCopy())

			data := make([]byte, 32<<10)
			for i := range data {
				data[i] = byte(i*31 + i>>9)
			}
			copy(h.Buf(1), data)
			require.NoError(t, h.Start(1, HarnessRequest{Op: OpWrite, Offset: 8192, Length: int64(len(data)), FUA: true}))
			tag, res, err := h.Wait()
			require.NoError(t, err)
			require.Equal(t, uint16(1), tag)
			require.Equal(t, int32(len(data)), res)
			onDisk := make([]byte, len(data))
			_, err = f.ReadAt(onDisk, 8192)
			require.NoError(t, err)
			assert.Equal(t, data, onDisk)

			clear(h.Buf(0))
			res, err = h.Do(HarnessRequest{Op: OpRead, Offset: 8192 + 4096, Length: 8192})
			require.NoError(t, err)
			require.Equal(t, int32(8192), res)
			assert.Equal(t, data[4096:4096+8192], h.Buf(0)[:8192])
			assert.Equal(t, !zc, target.sawBuf, "Request.Buf is there exactly when the queue copies")
			assert.Empty(t, target.errs)

			r := &h.q.reqs[0]
			r.Op, r.Length = OpRead, 4096
			assert.ErrorIs(t, r.PrepReadInto(int(f.Fd()), 4096, 1, 0, 0), errDataRange)
			assert.ErrorIs(t, r.PrepWriteFrom(int(f.Fd()), -1, 512, 0, false, 0), errDataRange)
			if zc {
				assert.ErrorIs(t, r.PrepRead(int(f.Fd()), nil, 0, 0), errNoBuf)
			}
		})
	}
}

// A target that needs the bytes gets them even from a zero-copy harness.
func TestByteTargetKeepsTheCopy(t *testing.T) {
	h, err := NewZeroCopyHarness(&bytesTarget{}, 1, 4096)
	require.NoError(t, err)
	defer h.Close()
	assert.False(t, h.ZeroCopy())
}

// Fixed-buffer member I/O allocates nothing either.
func TestZeroCopyHotPathDoesNotAllocate(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "backing")
	require.NoError(t, err)
	defer f.Close()
	require.NoError(t, f.Truncate(1<<20))
	h, err := NewZeroCopyHarness(&halvesTarget{f: f}, 2, 64<<10)
	if err != nil {
		t.Skipf("cannot register fixed buffers here: %v", err)
	}
	defer h.Close()
	for _, op := range []Op{OpWrite, OpRead} {
		allocs := testing.AllocsPerRun(500, func() {
			if res, err := h.Do(HarnessRequest{Op: op, Offset: 65536, Length: 8192}); err != nil || res != 8192 {
				panic("request failed")
			}
		})
		assert.Zero(t, allocs, "%v", op)
	}
}

// With explicit registration a request is served only after its
// registration completed, and its buffer is unregistered before the commit
// (both go to /dev/null here, which fails them: what is checked is the
// order of the commands and the queue's state).
func TestRegisterModeOrder(t *testing.T) {
	devnull, err := os.Open(os.DevNull)
	require.NoError(t, err)
	defer devnull.Close()
	target := &countingTarget{}
	q := newQueue(0, 4, target, 1<<40)
	q.mode, q.canRegister = modeRegister, true
	q.iods = make([]uapi.IODesc, 4)
	require.NoError(t, q.openBuffers(4096, false))
	defer q.close()
	assert.Zero(t, q.bufferBytes(), "no buffers in zero-copy mode")
	q.charFd = int32(devnull.Fd())
	q.ring, err = uring.New(ringEntries(4))
	require.NoError(t, err)
	defer q.ring.Close()

	submitted := func() []uint64 {
		t.Helper()
		_, err := q.ring.SubmitAndWait(1)
		require.NoError(t, err)
		var uds []uint64
		for {
			cqe, ok := q.ring.PeekCQE()
			if !ok {
				return uds
			}
			uds = append(uds, cqe.UserData)
			q.ring.AdvanceCQ(1)
		}
	}

	q.iods[2] = uapi.IODesc{OpFlags: uapi.UBLK_IO_OP_READ, NrSectors: 8, StartSector: 64}
	q.onIO(2, uapi.UBLK_IO_RES_OK)
	assert.Zero(t, target.served, "served before its buffer is registered")
	assert.Equal(t, []uint64{udBuf | 2}, submitted())

	require.NoError(t, q.onBuf(2, false, 0))
	assert.Equal(t, 1, target.served)
	require.NoError(t, q.commitDone())
	assert.Equal(t, []uint64{udBuf | udBufUnreg | 2, udIO | 2}, submitted(), "unregister, then commit")
	assert.False(t, q.ownReg[2])

	// A registration that fails fails the request, which is committed
	// with nothing to unregister.
	q.onIO(2, uapi.UBLK_IO_RES_OK)
	assert.Equal(t, []uint64{udBuf | 2}, submitted())
	require.NoError(t, q.onBuf(2, false, -int32(unix.ENOMEM)))
	assert.Equal(t, 1, target.served)
	require.NoError(t, q.commitDone())
	assert.Equal(t, []uint64{udIO | 2}, submitted())

	// A failed unregister stops the queue: the tag could never be
	// registered again.
	assert.ErrorContains(t, q.onBuf(1, true, -int32(unix.EINVAL)), "unregister request buffer")
}

type countingTarget struct{ served int }

func (t *countingTarget) Params() Params               { return Params{Size: 1 << 40} }
func (t *countingTarget) Serve(r *Request)             { t.served++; r.Done(nil) }
func (t *countingTarget) Reap(*Request, uint32, int32) {}
