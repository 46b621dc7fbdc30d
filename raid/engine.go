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
	// MemberInFlight overrides InFlight for the members it names by path.
	MemberInFlight map[string]int
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

func newEngine(a *Array, o DiscardOptions) (*discard.Engine, []memberIssuer, error) {
	cfg, issuers, err := engineConfig(a, o)
	if err != nil {
		return nil, nil, err
	}
	e, err := discard.New(cfg)
	if err != nil {
		for _, i := range issuers {
			i.close()
		}
		return nil, nil, err
	}
	return e, issuers, nil
}

// engineConfig picks each member's TRIM settings from what the member is and what was asked.
func engineConfig(a *Array, o DiscardOptions) (discard.Config, []memberIssuer, error) {
	mode, err := ParseDiscardMode(o.Mode)
	if err != nil {
		return discard.Config{}, nil, err
	}
	var issuers []memberIssuer
	fail := func(err error) (discard.Config, []memberIssuer, error) {
		for _, i := range issuers {
			i.close()
		}
		return discard.Config{}, nil, err
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
			mc.MaxLen = m.DiscardMax
			if a.gran[i].Alignment == 0 {
				// The engine's granules start at offset 0; a misaligned member keeps byte units
				// and mapping's inward rounding alone.
				mc.Granularity = a.gran[i].Bytes
			}
			mc.InFlight = discard.InFlightSATA
			if m.Block && !m.Rotational {
				mc.InFlight = discard.InFlightNVMe
			}
			// A drive that stalls reads and writes behind a TRIM should trim between them.
			mc.YieldToIO = m.Rotational
			if o.InFlight > 0 {
				mc.InFlight = o.InFlight
			}
			if n, ok := o.MemberInFlight[m.Path]; ok && n > 0 {
				mc.InFlight = n
			}
			is, err := newMemberIssuer(m, a.dataOff[i], mc.InFlight)
			if err != nil {
				return fail(fmt.Errorf("member %s: %w", m.Path, err))
			}
			issuers = append(issuers, is)
			mc.Issuer = is
		}
		cfg.Members = append(cfg.Members, mc)
	}
	return cfg, issuers, nil
}
