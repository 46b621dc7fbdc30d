package daemon

// handover.go owns the hand-over: draining a serving array and leaving its device, quiesced,
// to a successor (uraid restart, or the supervisor after ErrRestartMe).

import (
	"context"
	"errors"
	"fmt"
	"time"

	"uraid/array"
)

// change is a change to the array that a hand-over makes, in the quiet moment when nothing is in
// flight, so that the successor assembles the array as it is now.
type change interface {
	// check makes every check of the change and writes nothing; a refusal leaves the array
	// serving.
	check(a *array.Array) error
	// commit makes the change, once the members are marked clean, and records what the
	// successor is to assemble.
	commit(s *served) error
}

// drainTimeout bounds a hand-over's wait for the requests the array holds to finish.
const drainTimeout = time.Minute

// ErrRestartMe is what Run and Recover return once a supervised daemon has handed its device
// over: its supervisor must start the successor (uraid assemble --recover), and the daemon exits
// with a failure status so that Restart=on-failure does.
var ErrRestartMe = errors.New("device handed over: the supervisor starts the successor")

// handover drains the array and leaves its device to a successor: every request started is
// finished, queued TRIMs are done, the members flushed and marked clean, the record says so; the
// device's queues close without a stop, so the kernel quiesces it, and the requests that arrived
// meanwhile are reissued to the successor. Without reissue they would fail instead, so it is
// refused. It reports whether it left the device (an error with false: the array serves on).
// A change (of copies, of members; nil for none) is checked once the array is drained, a refusal
// leaving it serving, and committed once the members are clean: the successor assembles
// the array as the change left it. A commit that fails still hands over, with its error.
func (s *served) handover(c change) (left bool, err error) {
	a := s.a
	if !s.flags.Reissue() {
		return false, fmt.Errorf("array %s: its device %s was created without user recovery reissue (UBLK_F_USER_RECOVERY_REISSUE), so a hand-over would fail the requests that arrive meanwhile; stop the array (once unmounted) and assemble it again instead",
			a.Name, s.dev.Path())
	}
	ctx, cancel := context.WithTimeout(context.Background(), drainTimeout)
	defer cancel()
	if err := s.dev.Drain(ctx); err != nil {
		s.dev.EndDrain()
		return false, fmt.Errorf("array %s: hand over: %w", a.Name, err)
	}
	a.DrainDiscards()
	if err := a.Flush(); err != nil {
		s.dev.EndDrain()
		return false, fmt.Errorf("array %s: hand over: flush members: %w", a.Name, err)
	}
	if c != nil {
		if err := c.check(a); err != nil {
			s.dev.EndDrain()
			return false, err
		}
	}
	s.mu.Lock()
	s.rec.Handover, s.rec.Unclean = true, a.Unclean()
	err = writeRecord(s.rec)
	s.mu.Unlock()
	if err != nil {
		s.dev.EndDrain()
		return false, fmt.Errorf("array %s: hand over: %w", a.Name, err)
	}
	// Nothing is in flight and every write is durable: the members can say so, as after a clean
	// stop, which spares the successor a resync of the regions written lately (it marks them
	// dirty again before it serves). A member that fails here is left out by the successor.
	if err := a.MarkClean(); err != nil {
		s.log.Warn("hand over: members not marked clean", "err", err)
	}
	var changed error
	if c != nil {
		changed = c.commit(s)
	}
	s.event(EventHandedOver, "drained and flushed: the device is left to a successor")
	// From here the successor may start: it waits for this process to end.
	if err := s.dev.Abandon(); err != nil {
		s.log.Warn("hand over: device queues not closed cleanly", "err", err)
	}
	// The members go last, so that the successor cannot open them while this daemon still
	// could write.
	if err := a.Close(); err != nil {
		s.log.Warn("hand over: members not closed cleanly", "err", err)
	}
	return true, changed
}
