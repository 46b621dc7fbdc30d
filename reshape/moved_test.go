package reshape

import (
	"math/rand/v2"
	"testing"

	"uraid/mapping"
)

// TestBytesMoved plans whole reshapes of 16 GiB-member arrays that are 20%
// live (in 1 MiB regions, as the region map says) and counts what they move.
// Moving only live data costs each live byte one read and one write per copy;
// the reshape may cost at most 1.3 times that, backup included (the backup of
// the critical section holds its window whole, dead bytes too). The figures
// are logged, beside what moving every byte (md) would cost.
func TestBytesMoved(t *testing.T) {
	const (
		member = 16 << 30
		region = 1 << 20
	)
	for _, tc := range []struct {
		name   string
		level  mapping.Level
		layout mapping.Layout
		n, m   int
	}{
		{"raid0 4 to 5", mapping.RAID0, mapping.NoLayout, 4, 5},
		{"raid10-n2 4 to 6", mapping.RAID10, mapping.Near2, 4, 6},
		{"raid10-n2 4 to 5", mapping.RAID10, mapping.Near2, 4, 5},
		{"raid10-o2 4 to 6", mapping.RAID10, mapping.Offset2, 4, 6},
	} {
		for _, spread := range []string{"random", "first"} {
			t.Run(tc.name+" "+spread, func(t *testing.T) {
				r, err := New(geo(tc.level, tc.layout, 512*kib, tc.n, member), geo(tc.level, tc.layout, 512*kib, tc.m, member), Config{})
				if err != nil {
					t.Fatal(err)
				}
				regions := make([]bool, r.From().Size()/region)
				rng := rand.New(rand.NewPCG(1, 2))
				var live int64
				for i := range regions {
					regions[i] = rng.IntN(5) == 0
					if spread == "first" {
						regions[i] = i < len(regions)/5
					}
					if regions[i] {
						live += region
					}
				}
				liveFn := func(off, end int64) (bool, int64) {
					i := off / region
					v := regions[i]
					for i < int64(len(regions)) && i*region < end && regions[i] == v {
						i++
					}
					return v, min(end, i*region)
				}
				var st State
				var s Step
				var read, written, backup, discarded int64
				steps, backupSteps := 0, 0
				for !st.Done {
					if err := r.Next(st, liveFn, &s); err != nil {
						t.Fatal(err)
					}
					read, written, discarded = read+s.ReadBytes, written+s.WriteBytes, discarded+s.DiscardBytes
					for _, e := range s.BackupWrites {
						backup += e.Length
					}
					if s.Kind == BackupCopy {
						backupSteps++
					}
					steps++
					st = s.After
				}
				copies := int64(r.To().Copies())
				least := live * (1 + copies)
				ratio := float64(read+written) / float64(least)
				t.Logf("live %d MiB of %d MiB: read %d MiB, written %d MiB (backup %d KiB in %d steps, of at most %d KiB), discarded %d MiB; "+
					"%.3fx the least (read once, written per copy), %.2fx the live bytes; every byte moved would be %d MiB read and %d MiB written; %d steps",
					live>>20, r.From().Size()>>20, read>>20, written>>20, backup>>10, backupSteps, r.BackupBytes()>>10, discarded>>20,
					ratio, float64(read+written)/float64(live), r.From().Size()>>20, r.From().Size()*copies>>20, steps)
				if ratio > 1.3 {
					t.Errorf("moved %.3fx the least, want at most 1.3x", ratio)
				}
				// A backup holds its window whole, dead bytes too.
				if read < live || read > live+backup {
					t.Errorf("read %d bytes, want the %d live bytes and at most the backup's %d more", read, live, backup)
				}
			})
		}
	}
}
