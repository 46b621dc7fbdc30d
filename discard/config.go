package discard

import (
	"fmt"
	"time"

	"uraid/internal/clock"
	"uraid/mapping"
)

// Mode says when a discard is acknowledged.
type Mode int

const (
	// Sync acknowledges a discard once every member has trimmed its part:
	// the caller learns about member errors, and waits for the slowest
	// member.
	Sync Mode = iota
	// Async acknowledges a discard as soon as every part is queued; the
	// TRIMs run behind it. This is what keeps a slow member from stalling
	// the filesystem. Member errors are counted and passed to OnError.
	Async
)

func (m Mode) String() string {
	switch m {
	case Sync:
		return "sync"
	case Async:
		return "async"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// Defaults for the zero values of Member.
const (
	DefaultMaxQueued = 1024
	DefaultMaxDefer  = 100 * time.Millisecond
	// InFlightSATA suits drives that run one TRIM at a time and abort a
	// second one; InFlightNVMe suits drives with queued TRIM.
	InFlightSATA = 1
	InFlightNVMe = 4
	// DefaultMaxWatched bounds the discards whose trimming OnTrimmed waits
	// to hear of, when Config.MaxWatched is 0.
	DefaultMaxWatched = 8192
)

// Member configures how one member is trimmed.
type Member struct {
	// Issuer trims the member; nil means the member does not discard and
	// its ranges are acknowledged without doing anything. The engine
	// closes it.
	Issuer Issuer

	// InFlight is how many TRIMs the member has outstanding at once (0: 1).
	InFlight int
	// MaxLen is the longest single TRIM in bytes, the device's
	// max_discard_bytes (0: no limit), rounded down to whole granules.
	// Longer runs are cut.
	MaxLen int64
	// Granularity is the member's discard granularity in bytes (0: 1).
	// The ranges given to Discard should keep to it (mapping rounds them
	// inward); the engine then keeps every TRIM to it, including what is
	// left of a piece after a write cut it.
	Granularity int64
	// MaxQueued bounds the member's queue (0: DefaultMaxQueued pieces;
	// touching async pieces merge and count once). An async discard that
	// leaves a member above it is acknowledged only once the member is back
	// within it: the caller's request slot stays held, which is the
	// backpressure a block device obeys. Pieces are always accepted, so the
	// queue never holds more than MaxQueued plus the pieces of the
	// discards being held back.
	MaxQueued int

	// MinGap is the least time between the end of one TRIM and the start
	// of the next, for drives that charge a penalty for back-to-back
	// TRIMs. Queued TRIMs coalesce meanwhile.
	MinGap time.Duration

	// YieldToIO holds TRIMs back while the member has reads or writes in
	// progress (admitted and not yet ended), for drives whose TRIM stalls
	// other commands. MaxDefer bounds the hold so that TRIMs still progress
	// under constant load (0: DefaultMaxDefer).
	YieldToIO bool
	MaxDefer  time.Duration

	// Learn makes the lane measure what the member's TRIMs cost (package
	// learn) and pace them by what it learns: YieldToIO as the prior of
	// exclusivity, an in-flight limit of at most InFlight, and MinGap,
	// each unless Fixed names it. Decisions are told to Config.OnLearned.
	Learn bool
	// Fixed names the settings the operator chose: the lane still learns
	// them, to show, but keeps the configured value.
	Fixed Knobs
}

// Knobs names a member's TRIM settings, as a set.
type Knobs uint8

const (
	KnobExclusive Knobs = 1 << iota // YieldToIO
	KnobInFlight                    // InFlight
	KnobGap                         // MinGap
)

// Config configures an Engine.
type Config struct {
	Mode    Mode
	Members []Member

	// OnError, if set, hears of every failed TRIM, from the member's
	// lane goroutine with no lock held. In Async mode it is the only
	// place a TRIM error shows besides Stats. The extent is the TRIM's
	// (Logical 0: it may merge pieces of several discards).
	OnError func(x mapping.Extent, err error)

	// OnTrimmed, if set, is told once of every discard queued with a
	// non-zero Watch whether it was trimmed. trimmed is true only when
	// every piece the discard queued was settled without fault on every
	// member it was queued on: trimmed by TRIMs that completed without
	// error, or taken away by a write before it was issued (BeginWrite:
	// the write, which landed after the discard, is the caller's to
	// account for). It is false once a TRIM that may have covered a piece
	// failed, a piece was dropped (Fail, Close), or a piece was never
	// queued because its member was out of service (failed, or the engine
	// closed) when the discard came. A discard with nothing to queue (no
	// member it names discards, or every extent is empty) is trimmed at
	// once. No piece queued or in flight is ever taken for trimmed.
	//
	// It is called with no member lock held: from a lane goroutine, from
	// the goroutine of the Discard itself (a discard refused, or settled
	// before it was watched), or of Drain or Close. It must not block for
	// long and must not call into the engine. In Sync mode it comes before
	// Done when a TRIM settles the discard's last bytes. Drain returns only
	// after the calls for the discards it drained.
	OnTrimmed func(watch uint64, trimmed bool)
	// MaxWatched bounds the discards watched at once (0:
	// DefaultMaxWatched). A discard that finds the list full is told
	// trimmed false at once.
	MaxWatched int

	// Clock paces MinGap and MaxDefer (nil: the wall clock). Tests inject
	// a manual or virtual one.
	Clock clock.Clock

	// OnLearned, if set, hears every change of a learning member's
	// decision (Member.Learn), from the member's lane goroutine with no
	// lock held. It must not block and must not call into the engine.
	OnLearned func(member int, l Learned)
}

func (c *Config) check() error {
	if c.Mode != Sync && c.Mode != Async {
		return fmt.Errorf("%w: unknown mode %v", ErrConfig, c.Mode)
	}
	if len(c.Members) == 0 {
		return fmt.Errorf("%w: no members", ErrConfig)
	}
	if c.MaxWatched < 0 {
		return fmt.Errorf("%w: negative MaxWatched %d", ErrConfig, c.MaxWatched)
	}
	for i, m := range c.Members {
		if m.InFlight < 0 || m.MaxLen < 0 || m.Granularity < 0 || m.MaxQueued < 0 || m.MinGap < 0 || m.MaxDefer < 0 {
			return fmt.Errorf("%w: member %d: negative limit in %+v", ErrConfig, i, m)
		}
	}
	return nil
}

// withDefaults fills the zero values.
func (m Member) withDefaults() Member {
	if m.InFlight == 0 {
		m.InFlight = 1
	}
	if m.MaxQueued == 0 {
		m.MaxQueued = DefaultMaxQueued
	}
	if m.MaxDefer == 0 {
		m.MaxDefer = DefaultMaxDefer
	}
	return m
}
