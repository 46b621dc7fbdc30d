package robust

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/anishathalye/porcupine"
)

// The block model the history is checked against. The workload moves whole 4 KiB blocks, and
// every block a write puts down says which write and which block it is, so a read names the
// write it saw. Per block the model keeps the values the block may hold now (cur), what a power
// loss leaves for certain (durable, as of the last flush), and what was written since (since):
//   - a write makes the block hold its value; a FUA write makes it durable too;
//   - a discard makes the block read as anything until it is written again (any);
//   - a write or discard that failed or was cut off by a crash may or may not have happened;
//   - a flush makes what the block holds durable;
//   - a power loss leaves the block holding its durable value or anything written since;
//   - a kill (the daemon dies, the disks keep power) leaves it as it was.
// A read must return one of the values the block may hold, and from then on the block holds
// that one: a later read may not go back, unless the block reads as anything.
//
// Porcupine checks the history block by block (each block is its own register); a flush or a
// crash is an operation of every block's history.

// Block is the workload's unit.
const Block = 4096

const (
	valAny     = ^uint64(0)     // a discarded block: reads as anything
	valGarbage = ^uint64(0) - 1 // a read of bytes no write put there
	valZero    = 0              // a block of zeros
)

const magic = 0x75524431 // "uRD1"

// fillBlock writes write id's content for array block blk into b (Block bytes).
func fillBlock(b []byte, id uint64, blk int64) {
	binary.LittleEndian.PutUint32(b[0:], magic)
	binary.LittleEndian.PutUint64(b[4:], id)
	binary.LittleEndian.PutUint64(b[12:], uint64(blk))
	x := id*0x9e3779b97f4a7c15 ^ uint64(blk)
	for i := 20; i < Block; i += 4 {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		binary.LittleEndian.PutUint32(b[i:], uint32(x))
	}
}

// valueOf names what a read of array block blk returned: the write whose content it is, zeros,
// or garbage (bytes no write put there whole: a torn block, another block's data).
func valueOf(b []byte, blk int64) uint64 {
	if binary.LittleEndian.Uint32(b) == magic && binary.LittleEndian.Uint64(b[12:]) == uint64(blk) {
		id := binary.LittleEndian.Uint64(b[4:])
		var want [Block]byte
		fillBlock(want[:], id, blk)
		if string(want[:]) == string(b[:Block]) {
			return id
		}
	}
	for _, c := range b[:Block] {
		if c != 0 {
			return valGarbage
		}
	}
	return valZero
}

// opKind is what a block operation does.
type opKind uint8

const (
	kRead opKind = iota
	kWrite
	kWriteMaybe // failed, or cut off by a crash: may or may not have happened
	kDiscard
	kDiscardMaybe
	kFlush
	kPowerLoss
	kKill
)

var kindNames = [...]string{"read", "write", "write?", "discard", "discard?", "flush", "power-loss", "kill"}

// blockIn is a block operation's input.
type blockIn struct {
	kind  opKind
	block int64
	val   uint64 // a write's id
	fua   bool
	note  string // what the harness was doing, for the failure's story
}

// blockState is the model's state of one block; sets are sorted, encoded in a string so states
// compare with ==.
type blockState struct {
	cur, durable, since string
}

func enc(s []uint64) string {
	slices.Sort(s)
	s = slices.Compact(s)
	var b strings.Builder
	for _, v := range s {
		var x [8]byte
		binary.LittleEndian.PutUint64(x[:], v)
		b.Write(x[:])
	}
	return b.String()
}

func dec(s string) []uint64 {
	out := make([]uint64, 0, len(s)/8)
	for i := 0; i+8 <= len(s); i += 8 {
		out = append(out, binary.LittleEndian.Uint64([]byte(s[i:i+8])))
	}
	return out
}

func union(a, b string) string { return enc(append(dec(a), dec(b)...)) }

func one(v uint64) string { return enc([]uint64{v}) }

// initial is a block no write has touched since the array was made: a new array's blocks read
// as whatever the members held (the array counts them trimmed).
var initial = blockState{cur: one(valAny), durable: one(valAny)}

func step(st blockState, in blockIn, out uint64) (bool, blockState) {
	switch in.kind {
	case kRead:
		cur := dec(st.cur)
		if slices.Contains(cur, valAny) {
			return true, st
		}
		if !slices.Contains(cur, out) {
			return false, st
		}
		st.cur = one(out)
		return true, st
	case kWrite:
		st.cur = one(in.val)
		if in.fua {
			st.durable, st.since = st.cur, ""
		} else {
			st.since = union(st.since, st.cur)
		}
		return true, st
	case kWriteMaybe:
		st.cur = union(st.cur, one(in.val))
		st.since = union(st.since, one(in.val))
		return true, st
	case kDiscard:
		st.cur = one(valAny)
		st.since = union(st.since, st.cur)
		return true, st
	case kDiscardMaybe:
		st.cur = union(st.cur, one(valAny))
		st.since = union(st.since, one(valAny))
		return true, st
	case kFlush:
		st.durable, st.since = st.cur, ""
		return true, st
	case kPowerLoss:
		st.cur = union(st.durable, st.since)
		st.durable, st.since = st.cur, ""
		return true, st
	case kKill:
		return true, st
	}
	return false, st
}

func describe(v uint64) string {
	switch v {
	case valAny:
		return "any"
	case valGarbage:
		return "garbage"
	case valZero:
		return "zeros"
	}
	return fmt.Sprintf("w%d", v)
}

func describeSet(s string) string {
	var parts []string
	for _, v := range dec(s) {
		parts = append(parts, describe(v))
	}
	return "{" + strings.Join(parts, " ") + "}"
}

var blockModel = porcupine.Model{
	Init: func() interface{} { return initial },
	Step: func(state, input, output interface{}) (bool, interface{}) {
		return step(state.(blockState), input.(blockIn), output.(uint64))
	},
	DescribeOperation: func(input, output interface{}) string {
		in := input.(blockIn)
		s := fmt.Sprintf("b%d %s", in.block, kindNames[in.kind])
		switch in.kind {
		case kRead:
			s += " -> " + describe(output.(uint64))
		case kWrite, kWriteMaybe:
			s += " " + describe(in.val)
			if in.fua {
				s += " fua"
			}
		}
		if in.note != "" {
			s += " (" + in.note + ")"
		}
		return s
	},
	DescribeState: func(state interface{}) string {
		st := state.(blockState)
		return fmt.Sprintf("cur %s durable %s since %s", describeSet(st.cur), describeSet(st.durable), describeSet(st.since))
	},
}

// history records block operations as the workload runs; its clock orders them.
type history struct {
	clock int64
	// seen is clock for readers without the history's lock: the harness's log lines carry it.
	seen atomic.Int64
	ops  map[int64][]porcupine.Operation // by block
	// global lists the flushes and crashes, which belong to every block's history.
	global []porcupine.Operation
}

func newHistory() *history { return &history{ops: map[int64][]porcupine.Operation{}} }

func (h *history) now() int64 { h.clock++; h.seen.Store(h.clock); return h.clock }

func (h *history) add(client int, in blockIn, out uint64, call, ret int64) {
	op := porcupine.Operation{ClientId: client, Input: in, Output: out, Call: call, Return: ret}
	h.ops[in.block] = append(h.ops[in.block], op)
}

func (h *history) addGlobal(client int, in blockIn, call, ret int64) {
	h.global = append(h.global, porcupine.Operation{ClientId: client, Input: in, Output: uint64(0), Call: call, Return: ret})
}

// verdict is a history that failed the check: the block, and a porcupine visualization.
type verdict struct {
	block int64
	info  porcupine.LinearizationInfo
	ops   []porcupine.Operation
}

// relevant returns the global operations a block's history needs: every crash, and the flushes,
// of which only the last of each quiet stretch (no operation of the block in flight, no crash
// between) says anything the others do not.
func (h *history) relevant(own []porcupine.Operation) []porcupine.Operation {
	own = slices.Clone(own)
	slices.SortFunc(own, func(a, b porcupine.Operation) int { return int(a.Call - b.Call) })
	maxRet := make([]int64, len(own))
	for i, o := range own {
		maxRet[i] = o.Return
		if i > 0 {
			maxRet[i] = max(maxRet[i], maxRet[i-1])
		}
	}
	type gap struct{ nextOp, crashes int }
	last := map[gap]int{}
	var keep []bool
	crashes := 0
	for i, g := range h.global {
		keep = append(keep, false)
		if k := g.Input.(blockIn).kind; k != kFlush {
			keep[i] = true
			crashes++
			continue
		}
		k, _ := slices.BinarySearchFunc(own, g.Return+1, func(o porcupine.Operation, t int64) int { return int(o.Call - t) })
		if k > 0 && maxRet[k-1] >= g.Call {
			keep[i] = true // overlaps an operation of the block
			continue
		}
		key := gap{k, crashes}
		if j, ok := last[key]; ok {
			keep[j] = false
		}
		last[key] = i
		keep[i] = true
	}
	var out []porcupine.Operation
	for i, g := range h.global {
		if keep[i] {
			out = append(out, g)
		}
	}
	return out
}

// check checks every block's history; it returns the first block that is not linearizable.
func (h *history) check(timeout time.Duration) (*verdict, error) {
	blocks := make([]int64, 0, len(h.ops))
	for b := range h.ops {
		blocks = append(blocks, b)
	}
	slices.Sort(blocks)
	for _, b := range blocks {
		own := h.ops[b]
		ops := append(slices.Clone(own), h.relevant(own)...)
		for i := len(own); i < len(ops); i++ {
			in := ops[i].Input.(blockIn)
			in.block = b
			ops[i].Input = in
		}
		res, info := porcupine.CheckOperationsVerbose(blockModel, ops, timeout)
		switch res {
		case porcupine.Ok:
		case porcupine.Illegal:
			return &verdict{block: b, info: info, ops: ops}, nil
		default:
			return nil, fmt.Errorf("block %d: the linearizability check did not finish in %v (%d operations)", b, timeout, len(ops))
		}
	}
	return nil, nil
}
