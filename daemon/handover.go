package daemon

// handover.go owns the hand-over: draining a serving array and leaving its device, quiesced,
// to a successor (uraid restart, or the supervisor after ErrRestartMe).

import (
	"context"
	"errors"
	"fmt"
	"time"
)

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
// refused.
func (s *served) handover() error {
	a := s.a
	if !s.flags.Reissue() {
		return fmt.Errorf("array %s: its device %s was created without user recovery reissue (UBLK_F_USER_RECOVERY_REISSUE), so a hand-over would fail the requests that arrive meanwhile; stop the array (once unmounted) and assemble it again instead",
			a.Name, s.dev.Path())
	}
	ctx, cancel := context.WithTimeout(context.Background(), drainTimeout)
	defer cancel()
	if err := s.dev.Drain(ctx); err != nil {
		s.dev.EndDrain()
		return fmt.Errorf("array %s: hand over: %w", a.Name, err)
	}
	a.DrainDiscards()
	if err := a.Flush(); err != nil {
		s.dev.EndDrain()
		return fmt.Errorf("array %s: hand over: flush members: %w", a.Name, err)
	}
	s.mu.Lock()
	s.rec.Handover, s.rec.Unclean = true, a.Unclean()
	err := writeRecord(s.rec)
	s.mu.Unlock()
	if err != nil {
		s.dev.EndDrain()
		return fmt.Errorf("array %s: hand over: %w", a.Name, err)
	}
	// Nothing is in flight and every write is durable: the members can say so, as after a clean
	// stop, which spares the successor a resync of the regions written lately (it marks them
	// dirty again before it serves). A member that fails here is left out by the successor.
	if err := a.MarkClean(); err != nil {
		s.log.Warn("hand over: members not marked clean", "err", err)
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
	return nil
}
