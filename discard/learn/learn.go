package learn

import (
	"math"
	"time"
)

// Thresholds. Latencies are compared as ratios of decayed geometric means
// (log2 of nanoseconds), plus an absolute excess so that a fast member's
// microseconds of jitter never count as a stall. Each pair of thresholds
// (enter, leave) is a factor of two apart: a mean that sits between them
// keeps the decision it has.
const (
	// A read or write that overlaps a TRIM is a stall when its mean is at
	// least StallEnter times the clean mean and StallExcessEnter more;
	// exclusivity ends when it falls below StallLeave times or
	// StallExcessLeave more.
	StallEnter       = 3.0
	StallLeave       = 1.5
	StallExcessEnter = time.Millisecond
	StallExcessLeave = 500 * time.Microsecond
	// MinOverlapped and MinClean samples are needed before exclusivity is
	// judged; ExclusiveEnterRuns (ExclusiveLeaveRuns) TRIM completions in a
	// row, each with a fresh overlapped sample, must agree to change it.
	MinOverlapped      = 4
	MinClean           = 8
	ExclusiveEnterRuns = 2
	ExclusiveLeaveRuns = 8

	// A gap bucket is penalized when its TRIMs take over PenaltyEnter times the
	// best bucket's and PenaltyExcessEnter more, and stays so until they
	// fall below PenaltyLeave times or PenaltyExcessLeave more. MinGapSamples
	// samples make a bucket known; GapRuns evaluations in a row must agree
	// on a new gap.
	PenaltyEnter       = 4.0
	PenaltyLeave       = 2.0
	PenaltyExcessEnter = time.Millisecond
	PenaltyExcessLeave = 250 * time.Microsecond
	MinGapSamples      = 3
	GapRuns            = 2
	// A bucket whose rests straddle the member's window holds clean TRIMs
	// and penalized ones. Its geometric mean hides a minority of penalties
	// (a quarter of TRIMs at 100x moves it only 3.2x), yet each costs a
	// hundred clean ones. So a bucket is also penalized while its share of
	// slow TRIMs (SlowFactor times the best bucket's latency and
	// PenaltyExcessEnter more; decayed by alphaSlow) costs more than resting
	// into the next bucket would: share times what a slow TRIM takes over
	// the best is at least the next bucket's edge over this one's, and the
	// share is at least SlowMin. It is clean again once the cost falls under
	// half that, or the share under SlowMin/2. SlowFactor is twice
	// PenaltyEnter: one TRIM is judged against a mean, so its own noise must
	// not make it slow. SlowMin is two slow TRIMs among the last 32 or so: an
	// outlier alone never penalizes a bucket.
	SlowFactor = 2 * PenaltyEnter
	SlowMin    = 2 * alphaSlow

	// The member serializes its TRIMs when their latency grows with the
	// number in flight with a log-log slope of at least SerialEnter (1 is
	// strictly linear: each waits for those ahead), and stops when it falls
	// to SerialLeave. MinConcSamples at one in flight and as many at more
	// are needed; SerialRuns (SerialLeaveRuns) evaluations in a row, each
	// after a new TRIM beside others, must agree.
	SerialEnter     = 0.7
	SerialLeave     = 0.4
	MinConcSamples  = 8
	SerialRuns      = 3
	SerialLeaveRuns = 2 // leaving rests on probes, one in ProbeEvery TRIMs

	// ProbeEvery TRIMs, one runs as the decision forbids (at the highest
	// penalized gap, or one more in flight), or, while only back-to-back
	// TRIMs of a millisecond or more were ever seen, after a rest of the
	// longest gap bucket (1.024 s), so that what the decision hides is
	// measured again.
	ProbeEvery = 32
	// A gap probe pays the penalty it checks for: on a member of 1 ms
	// TRIMs, 100 ms back to back and a 10 ms gap, one probe in 32 TRIMs
	// costs a fifth more time than the TRIMs themselves. So probes at a
	// penalized gap are spaced to cost at most 1/ProbeEvery of the time the
	// member's TRIMs take at the learned gap (probeEvery), up to
	// MaxProbeEvery TRIMs apart.
	MaxProbeEvery = 4 * ProbeEvery

	// A member's first CautiousTrims TRIMs run one at a time, whatever
	// the limit: until some have run, nothing says whether its TRIMs stall
	// its reads and writes or queue behind each other, and a SATA-like
	// drive takes every TRIM sent to it into its one queue, where reads
	// then wait behind all of them (before this, the first five or six
	// TRIMs of an fstrim ran four deep in such a drive, 142 ms back to
	// back against 104 ms one at a time). They are also the reference at
	// one in flight that the in-flight judgement needs (MinConcSamples).
	// On a fast member they cost a few serial TRIMs once.
	CautiousTrims = MinConcSamples
)

// Smoothing weights of the decayed means: a new sample moves a mean by this
// fraction of its distance (by 1/n for the first samples, so that a fresh
// mean is a plain average).
const (
	alphaClean = 1.0 / 32 // the clean baseline: slow, it is the reference
	alphaOver  = 1.0 / 4  // overlapped I/O: quick to see a stall
	alphaGap   = 1.0 / 8
	alphaSlow  = 1.0 / 32 // shares of slow TRIMs: a few percent must show
	alphaConc  = 1.0 / 8
	alphaTrim  = 1.0 / 8
	alphaSize  = 1.0 / 8
	// A probe's sample is rare, so each counts for more: a quarter for
	// concurrency, whose differences are small next to the noise; half for
	// a gap, whose penalties are many times the noise.
	alphaProbe    = 1.0 / 4
	alphaGapProbe = 1.0 / 2
	sampleWeight  = 1 << 20 // counts stop growing here, harmlessly
)

// Buckets. Gap bucket 0 is back to back (under gapUnit); bucket k>0 holds
// gaps from gapUnit * 2^((k-1)/GapSteps) to the next bucket's edge, a
// quarter of an octave (19%) wide; the last, from 1.024 s, holds every
// longer gap and the member's first TRIM. A learned gap is always a
// bucket's lower edge, so a bucket's width is the margin a gap may keep
// above the member's window: doubling buckets let the gap sit at up to
// twice the window, which costs as much as the window itself on TRIMs that
// run back to back.
const (
	gapUnit     = 250 * time.Microsecond
	GapSteps    = 4  // buckets per doubling of the gap
	gapOctaves  = 12 // gapUnit << 12 = 1.024 s, the last bucket's edge
	GapBuckets  = 2 + gapOctaves*GapSteps
	ConcBuckets = 8 // 1..8 TRIMs in flight at a TRIM's start; more count as 8
	SizeBuckets = 12
	sizeUnit    = 4096 // size bucket k>0: [4 KiB<<(2(k-1)), 4 KiB<<(2k)): by fours
	// CoarseGapBuckets are the doubling buckets the basis reports
	// (TrimByGapUS): back to back, then gapUnit<<(k-1) up, the last from
	// 1.024 s. Each holds GapSteps fine buckets.
	CoarseGapBuckets = 2 + gapOctaves
)

// gapEdges are the fine buckets' lower edges, rounded to microseconds so
// that a learned gap reads plainly (11.314 ms).
var gapEdges = func() (e [GapBuckets]time.Duration) {
	for k := 1; k < GapBuckets; k++ {
		f := float64(gapUnit) * math.Exp2(float64(k-1)/GapSteps)
		e[k] = time.Duration(math.Round(f/float64(time.Microsecond))) * time.Microsecond
	}
	return e
}()

// TrimSample is one completed TRIM.
type TrimSample struct {
	Bytes int64
	Took  time.Duration
	// Gap is the time from the end of the member's previous TRIM to this
	// one's start; negative when there was none.
	Gap time.Duration
	// InFlight is how many TRIMs were in flight when it started, itself
	// included (1: alone). A TRIM that started beside another had no gap.
	InFlight int
}

// IOSample is one completed member read or write.
type IOSample struct {
	Took time.Duration
	// Overlapped is true when a TRIM was in flight on the member at some
	// point between the I/O's start and its end.
	Overlapped bool
}

// Decision is how the member is trimmed, and why.
type Decision struct {
	Exclusive bool          `json:"exclusive"`
	InFlight  int           `json:"inflight"`
	Gap       time.Duration `json:"-"`
	GapMS     float64       `json:"gap_ms"`
	Basis     Basis         `json:"basis"`
}

// Basis is what a decision was taken on: decayed geometric means in
// microseconds (0: not measured yet) and sample counts.
type Basis struct {
	IOCleanUS      int64  `json:"io_clean_us"`
	IOCleanN       uint64 `json:"io_clean_samples"`
	IOOverlappedUS int64  `json:"io_overlapped_us"`
	IOOverlappedN  uint64 `json:"io_overlapped_samples"`
	Trims          uint64 `json:"trims"`
	TrimUS         int64  `json:"trim_us"`
	// TrimIsolatedUS is the best gap bucket's TRIM latency, TrimBackToBackUS
	// back-to-back TRIMs'.
	TrimIsolatedUS   int64 `json:"trim_isolated_us"`
	TrimBackToBackUS int64 `json:"trim_back_to_back_us"`
	// TrimByGapUS is TRIM latency per doubling gap bucket (bucket k: gaps
	// from 0.25 ms << (k-1)), the fine buckets it holds pooled;
	// TrimByInFlightUS per number in flight at the start (1..8); TrimBySizeUS
	// per size bucket (bucket k: from 4 KiB << 2(k-1)).
	TrimByGapUS      [CoarseGapBuckets]int64 `json:"trim_by_gap_us"`
	TrimByInFlightUS [ConcBuckets]int64      `json:"trim_by_inflight_us"`
	TrimBySizeUS     [SizeBuckets]int64      `json:"trim_by_size_us"`
	// GapPenalizedBelowMS is the rest under which TRIMs were found
	// penalized: the upper edge of the highest penalized gap bucket (0: none).
	// The learned gap is the lower edge of the first clean bucket above it.
	GapPenalizedBelowMS float64 `json:"gap_penalized_below_ms"`
	// SerialSlope is how TRIM latency grows with the TRIMs in flight
	// (log-log: 1 serialized, 0 parallel); NaN-free, 0 until measured.
	SerialSlope float64 `json:"serial_slope"`
	// Probes counts the TRIMs run against the decision to check it.
	Probes uint64 `json:"probes"`
	// Changes counts the decisions changed since the member was set up.
	Changes uint64 `json:"changes"`
}

// mean is a decayed mean of log2 latency in nanoseconds.
type mean struct {
	log2 float64
	n    uint64
}

// add moves the mean toward d and returns the weight d was given.
func (m *mean) add(d time.Duration, alpha float64) float64 {
	x := math.Log2(float64(max(d, time.Nanosecond)))
	if m.n < sampleWeight {
		m.n++
	}
	w := max(1/float64(m.n), alpha)
	m.log2 += w * (x - m.log2)
	return w
}

func (m *mean) known(n uint64) bool { return m.n >= n }

func (m *mean) dur() time.Duration {
	if m.n == 0 {
		return 0
	}
	return time.Duration(math.Exp2(m.log2))
}

func (m *mean) us() int64 {
	if m.n == 0 {
		return 0
	}
	return max(int64(math.Round(math.Exp2(m.log2)/float64(time.Microsecond))), 1)
}

// Learner learns one member. The zero value is not ready: use New.
type Learner struct {
	priorExclusive bool
	limit          int // the configured in-flight limit: never exceeded

	clean, over mean
	freshOver   int // overlapped samples since the last TRIM
	trim        mean
	gap         [GapBuckets]mean
	slow        [GapBuckets]float64 // decayed share of slow TRIMs
	slowTook    mean                // what slow TRIMs take
	penalized   [GapBuckets]bool
	conc        [ConcBuckets]mean
	size        [SizeBuckets]mean

	exclusive bool
	exRuns    int
	serial    bool
	serRuns   int
	freshConc bool // a TRIM beside others since the last judgement
	slope     float64
	gapK      int // learned gap bucket: gap = its lower edge
	top       int // the highest penalized gap bucket, -1: none
	gapCand   int
	gapRuns   int

	trims      uint64
	sinceProbe int
	sinceSolo  int // TRIMs since one ran alone
	probes     uint64
	changes    uint64
}

// New returns a learner whose decision starts as the prior: exclusive as
// detected from what the member is, limit TRIMs in flight (also the most
// it will ever allow), no gap.
func New(exclusive bool, limit int) *Learner {
	l := &Learner{}
	l.Reset(exclusive, limit)
	return l
}

// Reset forgets everything measured and starts again from the prior.
func (l *Learner) Reset(exclusive bool, limit int) {
	*l = Learner{priorExclusive: exclusive, limit: max(limit, 1), exclusive: exclusive, top: -1}
}

// ObserveIO records one member read or write.
func (l *Learner) ObserveIO(s IOSample) {
	if s.Overlapped {
		l.over.add(s.Took, alphaOver)
		l.freshOver++
		return
	}
	l.clean.add(s.Took, alphaClean)
}

func gapBucket(g time.Duration) int {
	if g < 0 {
		return GapBuckets - 1
	}
	k := 0
	for k < GapBuckets-1 && g >= gapEdges[k+1] {
		k++
	}
	return k
}

// gapEdge is the lower edge of gap bucket k.
func gapEdge(k int) time.Duration { return gapEdges[k] }

// bestGap is the known gap bucket of least latency, -1 while none is known.
func (l *Learner) bestGap() int {
	best := -1
	for k := range l.gap {
		if l.gap[k].known(MinGapSamples) && (best < 0 || l.gap[k].log2 < l.gap[best].log2) {
			best = k
		}
	}
	return best
}

// slowTrim reports whether a TRIM that took d paid a penalty: SlowFactor
// times the best bucket's latency and PenaltyExcessEnter more. Nothing is
// slow while no bucket is known.
func (l *Learner) slowTrim(d time.Duration) bool {
	best := l.bestGap()
	if best < 0 {
		return false
	}
	ref := l.gap[best].dur()
	return float64(d) >= SlowFactor*float64(ref) && d-ref >= PenaltyExcessEnter
}

func sizeBucket(n int64) int {
	k := 0
	for k < SizeBuckets-1 && n >= sizeUnit<<(2*k) {
		k++
	}
	return k
}

// ObserveTrim records one completed TRIM, revises the decision and reports
// whether it changed.
func (l *Learner) ObserveTrim(s TrimSample) (changed bool) {
	l.trims++
	l.sinceProbe++
	l.sinceSolo++
	l.trim.add(s.Took, alphaTrim)
	l.size[sizeBucket(s.Bytes)].add(s.Took, alphaSize)
	c := min(max(s.InFlight, 1), ConcBuckets)
	if c == 1 {
		l.sinceSolo = 0
	}
	if alpha := alphaConc; c > 1 {
		if l.serial {
			alpha = alphaProbe // rare now: each counts for more
		}
		l.conc[c-1].add(s.Took, alpha)
		l.freshConc = true
	} else {
		l.conc[0].add(s.Took, alphaConc)
	}
	if l.serial && c > 1 {
		// Only probes run more than one TRIM now, one more at a time: what
		// was measured deeper can never be refreshed, and must not hold
		// the decision.
		for k := c; k < ConcBuckets; k++ {
			l.conc[k] = mean{}
		}
	}
	gap := s.Gap
	if c > 1 {
		gap = 0
	}
	k := gapBucket(gap)
	slow := 0.0
	if l.slowTrim(s.Took) {
		slow = 1
	}
	alpha, alphaS := alphaGap, alphaSlow
	if l.gapK > 0 && k < l.gapK {
		// A probe, or a bisection step: rare, each counts for more.
		alpha, alphaS = alphaGapProbe, alphaGapProbe
	}
	n := l.gap[k].n
	l.gap[k].add(s.Took, alpha)
	w := max(1/float64(n+1), alphaS)
	l.slow[k] += w * (slow - l.slow[k])
	if slow > 0 {
		l.slowTook.add(s.Took, alphaGap)
	}
	if (l.gapK > 0 && k < l.gapK) || c > l.Limit() || (l.gapK == 0 && k == GapBuckets-1) {
		// The decision forbade this TRIM (a probe), or it was isolated.
		l.sinceProbe = 0
		l.probes++
	}
	before := l.Decision()
	l.judgeExclusive()
	l.judgeSerial()
	l.judgeGap()
	after := l.Decision()
	if before.Exclusive != after.Exclusive || before.InFlight != after.InFlight || before.Gap != after.Gap {
		l.changes++
		return true
	}
	return false
}

// judgeExclusive revises exclusivity from overlapped against clean I/O, once
// per TRIM that brought a fresh overlapped sample.
func (l *Learner) judgeExclusive() {
	fresh := l.freshOver > 0
	l.freshOver = 0
	if !fresh || !l.over.known(MinOverlapped) || !l.clean.known(MinClean) {
		return
	}
	ratio := math.Exp2(l.over.log2 - l.clean.log2)
	excess := l.over.dur() - l.clean.dur()
	var vote bool
	need := ExclusiveEnterRuns
	if l.exclusive {
		vote, need = ratio < StallLeave || excess < StallExcessLeave, ExclusiveLeaveRuns
	} else {
		vote = ratio >= StallEnter && excess >= StallExcessEnter
	}
	if !vote {
		l.exRuns = 0
		return
	}
	if l.exRuns++; l.exRuns >= need {
		l.exclusive, l.exRuns = !l.exclusive, 0
	}
}

// judgeSerial revises the in-flight limit from TRIM latency against the
// number in flight.
func (l *Learner) judgeSerial() {
	fresh := l.freshConc
	l.freshConc = false
	if l.limit == 1 || !fresh || !l.conc[0].known(MinConcSamples) {
		return
	}
	var num, den float64
	var n uint64
	for c := 2; c <= ConcBuckets; c++ {
		m := &l.conc[c-1]
		if m.n == 0 {
			continue
		}
		w := float64(min(m.n, 16))
		num += w * (m.log2 - l.conc[0].log2)
		den += w * math.Log2(float64(c))
		n += m.n
	}
	if n < MinConcSamples || den == 0 {
		return
	}
	l.slope = num / den
	vote := l.slope >= SerialEnter
	if l.serial {
		vote = l.slope <= SerialLeave
	}
	if !vote {
		l.serRuns = 0
		return
	}
	need := SerialRuns
	if l.serial {
		need = SerialLeaveRuns
	}
	if l.serRuns++; l.serRuns >= need {
		l.serial, l.serRuns = !l.serial, 0
	}
}

// judgeGap revises the gap. A penalty falls as the gap grows, so the gap
// is the lower edge of the first known bucket above the highest penalized
// one, and no gap at all while no bucket is penalized. Buckets are judged
// against the best (the least latency) with hysteresis.
func (l *Learner) judgeGap() {
	best := l.bestGap()
	if best < 0 {
		return
	}
	for k := range l.gap {
		m := &l.gap[k]
		if k >= best || !m.known(MinGapSamples) {
			// A penalty falls as the gap grows: a bucket above the best
			// is not penalized, whatever stale or size-skewed figure it
			// holds.
			l.penalized[k] = false
			continue
		}
		ratio, excess := l.overBest(k, best)
		// What the bucket's slow TRIMs cost per TRIM, against what resting
		// into the next bucket costs.
		slowCost := l.slow[k] * float64(l.slowTook.dur()-l.gap[best].dur())
		step := float64(gapEdge(min(k+1, GapBuckets-1)) - gapEdge(k))
		if l.penalized[k] {
			l.penalized[k] = (ratio >= PenaltyLeave && excess >= PenaltyExcessLeave) ||
				(l.slow[k] >= SlowMin/2 && slowCost >= step/2)
		} else {
			// More than PenaltyEnter: noise of a factor of two either way
			// can put two buckets' means PenaltyEnter apart, never more.
			l.penalized[k] = (ratio > PenaltyEnter && excess >= PenaltyExcessEnter) ||
				(l.slow[k] >= SlowMin && slowCost >= step)
		}
	}
	if top := l.top; top >= 0 {
		p := probeBucket(top)
		ratio, excess := l.overBest(p, best)
		if l.gap[p].known(MinGapSamples) && (p >= best || ratio < PenaltyLeave || excess < PenaltyExcessLeave) {
			// The probes' gap is no longer punished (or the highest
			// penalized one, which they probe below GapSteps): what was
			// measured up to the highest penalized gap is stale. Forget it
			// and measure again. Its mean alone says so: half the window
			// is penalized on every TRIM while the window lasts, and the
			// share of slow TRIMs, meant to find rare penalties, would take
			// twice the probes to fall.
			for k := range top + 1 {
				if k != p || p == top {
					l.gap[k], l.slow[k], l.penalized[k] = mean{}, 0, false
				}
			}
			l.penalized[p] = false
		}
	}
	l.top = -1
	for k := GapBuckets - 1; k >= 0 && l.top < 0; k-- {
		if l.penalized[k] {
			l.top = k
		}
	}
	cand := 0
	if l.top >= 0 { // below best, so cand stays within the buckets
		cand = l.top + 1
		for cand < GapBuckets-1 && !(l.gap[cand].known(MinGapSamples) && !l.penalized[cand]) {
			cand++
		}
	}
	if cand == l.gapK {
		l.gapRuns = 0
		return
	}
	if cand != l.gapCand {
		l.gapCand, l.gapRuns = cand, 0
	}
	if l.gapRuns++; l.gapRuns >= GapRuns {
		l.gapK, l.gapRuns = cand, 0
	}
}

// overBest is how much gap bucket k's latency exceeds the best bucket's, as
// a ratio and as a difference.
func (l *Learner) overBest(k, best int) (ratio float64, excess time.Duration) {
	return math.Exp2(l.gap[k].log2 - l.gap[best].log2), l.gap[k].dur() - l.gap[best].dur()
}

// exploreGap is the rest that makes a TRIM isolated: the longest gap bucket.
func exploreGap() time.Duration { return gapEdge(GapBuckets - 1) }

// Limit is the in-flight limit decided, without probes: 1 for a member
// whose TRIMs serialize, and for one whose TRIMs stall its reads and
// writes, as --trim-exclusive and the prior (a rotational or ATA member)
// make it: every TRIM queued in such a drive lengthens the stall of the
// reads behind it, and a TRIM yields to I/O only before it starts. Also 1
// under a gap: a gap runs from the end of the last TRIM, so the lane starts
// none beside another (one started beside it would have no rest at all).
func (l *Learner) Limit() int {
	if l.serial || l.exclusive || l.gapK > 0 {
		return 1
	}
	return l.limit
}

// Gap is the gap decided, without probes.
func (l *Learner) Gap() time.Duration { return gapEdge(l.gapK) }

// Exclusive reports whether the member's TRIMs stall its reads and writes.
func (l *Learner) Exclusive() bool { return l.exclusive }

// Next is how the next TRIM to start is paced: the least gap since the last
// TRIM ended and the most TRIMs in flight. The first CautiousTrims run
// alone. When ProbeEvery TRIMs ran beside
// others, the next runs alone, so that the reference of the in-flight
// judgement stays measured under a flood. While the buckets between the
// highest penalized gap and the decided one are unknown, every TRIM rests
// halfway between (a bisection: a few TRIMs find the gap). Every ProbeEvery
// TRIMs it relaxes the decision once (a probe: the highest penalized gap,
// one more in flight), or, while no TRIM but back-to-back ones was ever
// measured and those take long enough to hide a penalty
// (PenaltyExcessEnter), asks for a long rest, so that a reference is
// measured.
func (l *Learner) Next() (gap time.Duration, limit int) {
	gap, limit = l.Gap(), l.Limit()
	if l.trims < CautiousTrims {
		limit = 1
	}
	if limit > 1 && l.sinceSolo >= ProbeEvery {
		// A flood keeps every slot busy, and a TRIM alone is the reference
		// concurrency is judged against: let one run alone.
		return gap, 1
	}
	if l.gapK > 0 && l.top >= 0 && l.gapK-l.top >= 2 {
		gap = gapEdge(l.top + (l.gapK-l.top)/2)
	}
	if l.sinceProbe < l.probeEvery() {
		return gap, limit
	}
	if limit < l.limit && !l.exclusive && l.gapK == 0 {
		// One more in flight, unless exclusivity or a gap keeps the member
		// to one whatever the probe would find.
		limit++
	}
	switch {
	case l.gapK > 0 && l.top >= 0:
		gap = gapEdge(probeBucket(l.top))
	case l.gapK == 0 && l.knownAbove(1) == 0 && l.gap[0].dur() >= PenaltyExcessEnter:
		// Back-to-back TRIMs slow enough to hide a penalty, and nothing
		// to compare them with.
		gap = exploreGap()
	}
	return gap, limit
}

// probeBucket is the gap bucket probes rest in while top is the highest
// penalized: GapSteps below it (half its gap), or back to back. Not top
// itself: the bucket that straddles a member's window (its rests are
// penalized only when the path adds less than the margin) would come back
// clean from a few probes in a row, be forgotten and found again, each
// time at the cost of a bisection's penalized TRIMs. Half the gap is
// punished as long as the window is, so a clean probe there means the
// member changed. A window that shrinks by less than half is not noticed:
// the gap stays at most twice what it could be.
func probeBucket(top int) int { return max(top-GapSteps, 0) }

// probeEvery is how many TRIMs apart probes run: ProbeEvery, or, while a
// gap is kept because a shorter one was penalized, as many as make the
// penalty a probe pays (the highest penalized bucket's latency over the
// best's) at most 1/ProbeEvery of a TRIM's time at the learned gap (its
// rest and the best bucket's latency).
func (l *Learner) probeEvery() int {
	best := l.bestGap()
	if l.gapK == 0 || l.top < 0 || best < 0 || !l.gap[l.top].known(MinGapSamples) {
		return ProbeEvery
	}
	extra := float64(l.gap[l.top].dur() - l.gap[best].dur())
	cycle := float64(l.Gap() + l.gap[best].dur())
	n := math.Ceil(ProbeEvery * extra / cycle)
	return int(min(max(n, ProbeEvery), MaxProbeEvery))
}

// knownAbove counts the known gap buckets from k up.
func (l *Learner) knownAbove(k int) int {
	n := 0
	for ; k < GapBuckets; k++ {
		if l.gap[k].known(MinGapSamples) {
			n++
		}
	}
	return n
}

// Decision is the current decision with its basis.
func (l *Learner) Decision() Decision {
	d := Decision{Exclusive: l.exclusive, InFlight: l.Limit(), Gap: l.Gap()}
	d.GapMS = float64(d.Gap) / float64(time.Millisecond)
	b := &d.Basis
	b.IOCleanUS, b.IOCleanN = l.clean.us(), l.clean.n
	b.IOOverlappedUS, b.IOOverlappedN = l.over.us(), l.over.n
	b.Trims, b.TrimUS = l.trims, l.trim.us()
	b.TrimBackToBackUS = l.gap[0].us()
	for c := range b.TrimByGapUS {
		m := l.coarseGap(c)
		b.TrimByGapUS[c] = m.us()
	}
	if best := l.bestGap(); best >= 0 {
		b.TrimIsolatedUS = l.gap[best].us()
	}
	if l.top >= 0 {
		b.GapPenalizedBelowMS = float64(gapEdge(l.top+1)) / float64(time.Millisecond)
	}
	for c := range l.conc {
		b.TrimByInFlightUS[c] = l.conc[c].us()
	}
	for k := range l.size {
		b.TrimBySizeUS[k] = l.size[k].us()
	}
	b.SerialSlope = l.slope
	b.Probes, b.Changes = l.probes, l.changes
	return d
}

// coarseGap pools the fine gap buckets of doubling bucket c, each weighted
// by its samples (as far as they count: the first 16).
func (l *Learner) coarseGap(c int) mean {
	lo, hi := 0, 0 // fine buckets [lo, hi]
	switch {
	case c == CoarseGapBuckets-1:
		lo, hi = GapBuckets-1, GapBuckets-1
	case c > 0:
		lo, hi = 1+(c-1)*GapSteps, c*GapSteps
	}
	var sum, w float64
	var n uint64
	for k := lo; k <= hi; k++ {
		if m := &l.gap[k]; m.n > 0 {
			f := float64(min(m.n, 16))
			sum += f * m.log2
			w += f
			n += m.n
		}
	}
	if n == 0 {
		return mean{}
	}
	return mean{log2: sum / w, n: n}
}

// Costs are what the learner expects a read to wait on the member, for
// steering: IO is a clean read or write's latency, Trim what one TRIM in
// flight adds to a read that overlaps it (0: unknown).
func (l *Learner) Costs() (io, trim time.Duration) {
	io = l.clean.dur()
	switch {
	case l.exclusive:
		trim = l.trim.dur()
	case l.over.known(MinOverlapped) && l.clean.known(MinClean):
		trim = max(l.over.dur()-l.clean.dur(), 0)
	}
	return io, trim
}
