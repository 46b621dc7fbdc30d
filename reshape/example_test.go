package reshape_test

import (
	"fmt"

	"uraid/mapping"
	"uraid/reshape"
)

// A raid0 of 4 members gains a fifth. The array persists each step's states
// and resumes from the last one it persisted; here nothing is cut.
func Example() {
	members := func(n int) mapping.Geometry {
		g := mapping.Geometry{Level: mapping.RAID0, ChunkBytes: 64 << 10}
		for range n {
			g.MemberBytes = append(g.MemberBytes, 1<<30)
		}
		return g
	}
	r, err := reshape.New(members(4), members(5), reshape.Config{})
	if err != nil {
		fmt.Println(err)
		return
	}
	var st reshape.State // as read from the superblocks: a new reshape
	var s reshape.Step
	kinds := map[reshape.Kind]int{}
	for !st.Done {
		if err := r.Next(st, nil, &s); err != nil {
			fmt.Println(err)
			return
		}
		// Park I/O at s.Position(); read s.Reads; for a BackupCopy write
		// s.BackupWrites, flush, persist s.Mid; write s.Writes, discard
		// s.Discards, flush; persist s.After.
		kinds[s.Kind]++
		st = s.After
	}
	fmt.Printf("unit %d KiB, backup %d KiB, steps: %d backup-copy, %d copy, %d finish\n",
		r.Unit()>>10, r.BackupBytes()>>10, kinds[reshape.BackupCopy], kinds[reshape.Copy], kinds[reshape.Finish])
	// Output: unit 320 KiB, backup 1280 KiB, steps: 1 backup-copy, 86 copy, 1 finish
}
