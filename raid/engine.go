package raid

import (
	"fmt"
	"os"
	"time"

	"uraid/discard"
)

// Pacing knobs of the discard engine, per array.
type DiscardOptions struct {
	// Mode is "sync" or "async" (default sync).
	Mode string
	// InFlight overrides how many TRIMs each member runs at once (0: 1 on rotational or
	// SATA-like members and files, 4 on other block devices).
	InFlight int
	// MinGap is the least time between two TRIMs on one member, for drives that charge a
	// penalty for back-to-back TRIMs.
	MinGap time.Duration
}

// ParseDiscardMode accepts "sync" and "async".
func ParseDiscardMode(s string) (discard.Mode, error) {
	switch s {
	case "", "sync":
		return discard.Sync, nil
	case "async":
		return discard.Async, nil
	}
	return 0, fmt.Errorf("discard mode %q: use sync (a discard completes when every member has trimmed) or async (it completes once queued)", s)
}

func newEngine(a *Array, o DiscardOptions) (*discard.Engine, error) {
	mode, err := ParseDiscardMode(o.Mode)
	if err != nil {
		return nil, err
	}
	cfg := discard.Config{
		Mode: mode,
		OnError: func(r discard.Range, err error) {
			fmt.Fprintf(os.Stderr, "uraid: array %s: discard %v: %v\n", a.Name, r, err)
		},
	}
	for i, m := range a.members {
		mc := discard.Member{MinGap: o.MinGap}
		if m != nil && a.gran[i].Bytes > 0 {
			mc.Issuer = memberIssuer{m: m, dataOff: a.dataOff[i]}
			mc.MaxLen = m.DiscardMax
			mc.InFlight = discard.InFlightSATA
			if m.Block && !m.Rotational {
				mc.InFlight = discard.InFlightNVMe
			}
			// A drive that stalls reads and writes behind a TRIM should trim between them.
			mc.YieldToIO = m.Rotational
			if o.InFlight > 0 {
				mc.InFlight = o.InFlight
			}
		}
		cfg.Members = append(cfg.Members, mc)
	}
	return discard.New(cfg)
}
