package array

import (
	"fmt"
	"time"

	"uraid/discard"
	"uraid/discard/learn"
)

// EventTrimLearned is a member's lane changing how it trims the member, from what it measured:
// Event.TrimLearned has the decision and the figures behind it.
const EventTrimLearned = "trim_learned"

// TrimLearned is what a member's TRIM lane learned of it by measurement (package discard/learn):
// whether its TRIMs stall its reads and writes, how many it runs at once, the rest it needs
// between TRIMs, and the figures those were decided on. Overridden names, as "exclusive
// overridden by --trim-exclusive", the settings a flag fixed: the member runs by the flag, and
// the learned figure is shown for comparison.
type TrimLearned struct {
	learn.Decision
	Overridden []string `json:"overridden,omitempty"`
}

// trimLearned turns the engine's word of a member's new decision into an event. It runs on the
// member's lane goroutine and must not block (emit never does) nor take membersMu: a Revive
// under it waits for the lane. The slot names the member.
func (a *Array) trimLearned(i int, l discard.Learned) {
	tl := newTrimLearned(l)
	a.emit(Event{Type: EventTrimLearned, Member: slotPtr(i), TrimLearned: tl, Message: tl.String()})
}

func newTrimLearned(l discard.Learned) *TrimLearned {
	tl := &TrimLearned{Decision: l.Decision}
	for _, k := range []struct {
		knob discard.Knobs
		what string
	}{
		{discard.KnobExclusive, "exclusive overridden by --trim-exclusive"},
		{discard.KnobInFlight, "inflight overridden by --trim-inflight"},
		{discard.KnobGap, "gap_ms overridden by --trim-gap"},
	} {
		if l.Fixed&k.knob != 0 {
			tl.Overridden = append(tl.Overridden, k.what)
		}
	}
	return tl
}

// String says the decision and its basis in words, for events and logs.
func (tl *TrimLearned) String() string {
	b := &tl.Basis
	s := fmt.Sprintf("trim learned: exclusive %v, %d in flight, gap %v (reads and writes %s beside a TRIM vs %s clean, %d/%d samples; TRIM %s isolated, %s back to back, %d TRIMs, slope %.2f by depth)",
		tl.Exclusive, tl.InFlight, tl.Gap, us(b.IOOverlappedUS), us(b.IOCleanUS), b.IOOverlappedN, b.IOCleanN,
		us(b.TrimIsolatedUS), us(b.TrimBackToBackUS), b.Trims, b.SerialSlope)
	for _, o := range tl.Overridden {
		s += "; " + o
	}
	return s
}

func us(n int64) string {
	if n == 0 {
		return "?"
	}
	return (time.Duration(n) * time.Microsecond).String()
}
