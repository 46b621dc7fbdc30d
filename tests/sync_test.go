package tests

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"uraid/daemon"
	"uraid/mapping"
	"uraid/simssd"
)

// The sync suite proves through the kernel that a mirror's copies stay in step: after a killed
// daemon the resync brings them back byte for byte, and copies only what the crash window
// wrote; a check finds a byte rotted under a live ext4 file, a repair fixes it; a check after
// fstrim finds nothing on drives that return garbage for trimmed blocks; a resync interrupted
// by a second kill resumes where it was.

// syncMemberSize keeps the guest's RAM-backed /tmp small, and a full resync (every region) far
// above what a crash window writes.
const syncMemberSize = 64 << 20

// mirrorArray is a raid1 or raid10 made for a sync test.
type mirrorArray struct {
	t       *testing.T
	name    string
	dev     string
	members []string
}

// mirrorLevels are the levels the sync suite runs on: raid1 over two members, raid10 (near) over
// four.
var mirrorLevels = []struct {
	level   string
	members int
}{{"1", 2}, {"10", 4}}

func newMirrorArray(t *testing.T, name, level string, members []string) *mirrorArray {
	t.Helper()
	args := []string{"create", name, "--level", level}
	if level == "10" {
		args = append(args, "--chunk", "64K")
	}
	out := uraid(t, append(args, members...)...)
	a := &mirrorArray{t: t, name: name, dev: strings.TrimSpace(out), members: members}
	require.True(t, strings.HasPrefix(a.dev, "/dev/ublkb"), "create printed %q", out)
	t.Cleanup(a.cleanup)
	return a
}

func (a *mirrorArray) cleanup() {
	if a.t.Failed() {
		if b, err := os.ReadFile(daemon.LogPath(a.name)); err == nil {
			a.t.Logf("daemon log of %s:\n%s", a.name, b)
		}
	}
	recoverIfDead(a.t, a.name)
	cleanupRun(uraidBin(a.t), "stop", a.name)
}

func (a *mirrorArray) status() daemon.Status { return daemonDetail(a.t, a.name) }

// run runs the CLI on the array and fails the test if it exits non-zero or takes longer than a
// job that was made inevitable ever could; then the daemon is made to dump its goroutines to
// its log (SIGQUIT), which cleanup shows.
func (a *mirrorArray) run(args ...string) string {
	a.t.Helper()
	ctx, cancel := context.WithTimeout(a.t.Context(), slow*30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, uraidBin(a.t), args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if ctx.Err() != nil {
		if e := daemon.Lookup(context.Background(), a.name); e.Status != nil {
			_ = syscall.Kill(e.Status.PID, syscall.SIGQUIT)
			time.Sleep(time.Second) // the dump is diagnostics for a failed test, not a condition
		}
	}
	require.NoError(a.t, err, "uraid %s: %s%s", strings.Join(args, " "), out, stderr.String())
	return string(out) + stderr.String()
}

// kill kills the daemon with SIGKILL and waits until the kernel has quiesced its device.
func (a *mirrorArray) kill(pid int) {
	a.t.Helper()
	require.NoError(a.t, syscall.Kill(pid, syscall.SIGKILL))
	require.Eventually(a.t, func() bool { return !processAlive(pid) }, slow*10*time.Second, 5*time.Millisecond)
	id := uint32FromDev(a.t, a.dev)
	(&recoveryArray{t: a.t, dev: a.dev}).waitQuiesced(id)
}

// waitSync runs uraid wait and checks that the last job was action and ran to its end.
func (a *mirrorArray) waitSync(action string) daemon.Status {
	a.t.Helper()
	out := a.run("wait", a.name)
	assert.Contains(a.t, out, a.name+": "+action+" done", out)
	st := a.status()
	require.NotNil(a.t, st.Sync)
	require.NotNil(a.t, st.Sync.Last, "no job ended")
	require.Equal(a.t, action, st.Sync.Last.Action)
	require.Empty(a.t, st.Sync.Last.Error)
	require.False(a.t, st.Sync.Last.Cancelled)
	assert.Equal(a.t, "idle", st.Sync.Action)
	return st
}

// syncWritten is what the sync jobs wrote, summed over the members.
func syncWritten(st daemon.Status) int64 {
	var n int64
	for _, m := range st.Members {
		n += int64(m.IO.SyncWriteBytes)
	}
	return n
}

// sectorsWritten is the kernel's count of bytes written to dev and completed (/sys/block/X/stat):
// what the user wrote, independent of the array's own counters.
func sectorsWritten(t *testing.T, dev string) int64 {
	t.Helper()
	b, err := os.ReadFile("/sys/block/" + filepath.Base(dev) + "/stat")
	require.NoError(t, err)
	f := strings.Fields(string(b))
	require.GreaterOrEqual(t, len(f), 7)
	n, err := strconv.ParseInt(f[6], 10, 64)
	require.NoError(t, err)
	return n << 9
}

// memberLayout is where the copies of every array byte live: the geometry the members'
// superblocks describe, as uraid examine shows them, and each member's data offset.
type memberLayout struct {
	m       *mapping.Map
	paths   []string
	dataOff []int64
}

func examineLayout(t *testing.T, paths []string) *memberLayout {
	t.Helper()
	l := &memberLayout{paths: paths}
	var g mapping.Geometry
	for i, p := range paths {
		var e struct {
			Level      string `json:"level"`
			Layout     string `json:"layout"`
			ChunkBytes int64  `json:"chunk_bytes"`
			Index      int    `json:"index"`
			DataOffset int64  `json:"data_offset_bytes"`
			DataSize   int64  `json:"data_size_bytes"`
		}
		out := uraid(t, "examine", "--json", p)
		require.NoError(t, json.Unmarshal([]byte(out), &e), out)
		require.Equal(t, i, e.Index, "%s is not in slot %d", p, i)
		var err error
		g.Level, err = mapping.ParseLevel(e.Level)
		require.NoError(t, err)
		if e.Layout != "" {
			g.Layout, err = mapping.ParseLayout(e.Layout)
			require.NoError(t, err)
		}
		g.ChunkBytes = e.ChunkBytes
		g.MemberBytes = append(g.MemberBytes, e.DataSize)
		l.dataOff = append(l.dataOff, e.DataOffset)
	}
	var err error
	l.m, err = mapping.New(g)
	require.NoError(t, err)
	return l
}

// copies is where the n bytes at array offset off live: one slice of pieces per copy.
func (l *memberLayout) pieces(t *testing.T, off, n int64) []mapping.Piece {
	t.Helper()
	ps, err := l.m.Read(off, n, nil)
	require.NoError(t, err)
	return ps
}

// readCopy reads extent e straight from its member, past the page cache.
func (l *memberLayout) readCopy(t *testing.T, e mapping.Extent) []byte {
	t.Helper()
	f, err := os.OpenFile(l.paths[e.Member], os.O_RDONLY|unix.O_DIRECT, 0)
	require.NoError(t, err)
	defer f.Close()
	start := l.dataOff[e.Member] + e.Offset
	alignedStart := start &^ 4095
	alignedEnd := (start + e.Length + 4095) &^ 4095
	buf := alignedBuf(int(alignedEnd - alignedStart))
	_, err = f.ReadAt(buf, alignedStart)
	require.NoError(t, err)
	return buf[start-alignedStart : start-alignedStart+e.Length]
}

// writeCopy overwrites the bytes of extent e on its member, as rot would, with O_DIRECT so that
// the array's own direct I/O sees it.
func (l *memberLayout) writeCopy(t *testing.T, e mapping.Extent, b []byte) {
	t.Helper()
	f, err := os.OpenFile(l.paths[e.Member], os.O_RDWR|unix.O_DIRECT, 0)
	require.NoError(t, err)
	defer f.Close()
	start := l.dataOff[e.Member] + e.Offset
	alignedStart := start &^ 4095
	alignedEnd := (start + int64(len(b)) + 4095) &^ 4095
	buf := alignedBuf(int(alignedEnd - alignedStart))
	_, err = f.ReadAt(buf, alignedStart)
	require.NoError(t, err)
	copy(buf[start-alignedStart:], b)
	_, err = f.WriteAt(buf, alignedStart)
	require.NoError(t, err)
	require.NoError(t, f.Sync())
}

// differingBytes compares every copy of every array byte with the first copy, straight from the
// members, and returns how many bytes differ.
func (l *memberLayout) differingBytes(t *testing.T) int64 {
	t.Helper()
	var diff int64
	const step = 1 << 20
	for off := int64(0); off < l.m.Size(); off += step {
		for _, p := range l.pieces(t, off, min(step, l.m.Size()-off)) {
			first := l.readCopy(t, p.Copies[0])
			for _, e := range p.Copies[1:p.N] {
				other := l.readCopy(t, e)
				if bytes.Equal(first, other) {
					continue
				}
				for i := range first {
					if first[i] != other[i] {
						diff++
					}
				}
			}
		}
	}
	return diff
}

// fioSeqWriter writes dev sequentially from its start, at most size bytes, with a checksum in
// every 64 KiB block (distinct contents everywhere), at a capped rate so that the test can kill
// the daemon mid-run on any machine.
func fioSeqWriter(t *testing.T, dev, size, rate string) (*exec.Cmd, *bytes.Buffer, chan error) {
	t.Helper()
	var out bytes.Buffer
	cmd := testCommand(t, "fio", fioSeqJob(dev, size, rate)...)
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	return cmd, &out, done
}

func fioSeqJob(dev, size, rate string) []string {
	job := []string{"--name=seq", "--filename=" + dev, "--rw=write", "--bs=64k", "--size=" + size,
		"--ioengine=io_uring", "--iodepth=4", "--direct=1", "--verify=crc32c", "--do_verify=0",
		"--randseed=5"}
	if rate != "" {
		job = append(job, "--rate="+rate)
	}
	return job
}

// TestE2EResyncAfterKill kills the daemon of a raid1 and a raid10, over files and over loop
// devices, while fio writes; uraid recover takes the device over, fio ends without an error
// and verifies, uraid wait sees the resync done, and then the copies are byte-identical
// straight from the members. The resync copies only what the crash window wrote: the array
// starts with no dirty region (a fresh array's regions are trimmed), so every byte written
// since is in the window; it is measured by the kernel (completed writes in /sys/block/X/stat,
// just before the kill), and the resync's writes, summed over the members, must be at most
// twice that. A resync of every region would write 4 to 8 times as much.
func TestE2EResyncAfterKill(t *testing.T) {
	uraidBin(t)
	for _, kind := range []string{"file", "loop"} {
		for _, lv := range mirrorLevels {
			t.Run(kind+"-raid"+lv.level, func(t *testing.T) {
				members, _ := memberSet(t, kind, lv.members, syncMemberSize)
				a := newMirrorArray(t, "rs"+lv.level+kind[:1], lv.level, members)
				st := a.status()
				require.NotNil(t, st.Regions)
				require.Zero(t, st.Regions.Dirty, "a fresh array has no dirty region")
				before := sectorsWritten(t, a.dev)

				fio, fioOut, fioDone := fioSeqWriter(t, a.dev, "40M", "4m")
				var window int64
				require.Eventually(t, func() bool {
					window = sectorsWritten(t, a.dev) - before
					return window >= 8<<20
				}, slow*2*time.Minute, 10*time.Millisecond, "fio did not get going")
				select {
				case err := <-fioDone:
					t.Fatalf("fio ended before the kill (%v): %s", err, fioOut)
				default:
				}
				a.kill(st.PID)
				t.Logf("killed the daemon after %d MiB written through the device", window>>20)

				out := uraid(t, "recover", a.name)
				require.Equal(t, a.dev, strings.TrimSpace(out))
				select {
				case err := <-fioDone:
					require.NoError(t, err, "fio: %s", fioOut)
				case <-time.After(slow * 3 * time.Minute):
					_ = fio.Process.Kill()
					t.Fatalf("fio did not finish: %s", fioOut)
				}
				st = a.waitSync("resync")
				moved := syncWritten(st)
				t.Logf("resync wrote %d KiB to the members for %d KiB written in the crash window: %.2fx (%d regions of %d)",
					moved>>10, window>>10, float64(moved)/float64(window), moved/st.Regions.RegionBytes, st.Regions.Regions)
				assert.Positive(t, moved, "the kill left regions to resync")
				assert.LessOrEqual(t, moved, 2*window, "the resync copied more than the crash window wrote")
				assert.Zero(t, st.Regions.NeedResync)

				// fio's checksums, read back through the array, and every copy, from the
				// members.
				vout, err := testCommand(t, "fio", append(fioSeqJob(a.dev, "40M", ""), "--verify_only")...).CombinedOutput()
				require.NoError(t, err, "%s", vout)
				require.Contains(t, string(vout), "err= 0", "%s", vout)
				uraid(t, "stop", a.name)
				assert.Zero(t, examineLayout(t, members).differingBytes(t), "the copies differ after the resync")
			})
		}
	}
}

// filePhysical is where a file's bytes are on its filesystem's device: each extent as (file
// offset, device offset, length), from filefrag.
type fileExtent struct{ logical, physical, length int64 }

var filefragLine = regexp.MustCompile(`^\s*\d+:\s*(\d+)\.\.\s*(\d+):\s*(\d+)\.\.\s*(\d+):\s*(\d+):`)

func fileExtents(t *testing.T, path string) []fileExtent {
	t.Helper()
	out := sh(t, "filefrag", "-v", "-b4096", path)
	var exts []fileExtent
	for _, line := range strings.Split(out, "\n") {
		m := filefragLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		lstart, _ := strconv.ParseInt(m[1], 10, 64)
		pstart, _ := strconv.ParseInt(m[3], 10, 64)
		n, _ := strconv.ParseInt(m[5], 10, 64)
		exts = append(exts, fileExtent{logical: lstart * 4096, physical: pstart * 4096, length: n * 4096})
	}
	require.NotEmpty(t, exts, "filefrag found no extent:\n%s", out)
	return exts
}

// TestE2ECheckRepairLiveFile rots one byte of one copy of a file on a mounted ext4 (found by
// filefrag, mapped to its member by the layout the superblocks describe) and runs check, which
// finds exactly that byte, and repair, which rewrites it; a second check finds nothing, and the
// file's bytes read straight from every copy hash as written.
func TestE2ECheckRepairLiveFile(t *testing.T) {
	uraidBin(t)
	for _, kind := range []string{"file", "loop"} {
		for _, lv := range mirrorLevels {
			t.Run(kind+"-raid"+lv.level, func(t *testing.T) {
				members, _ := memberSet(t, kind, lv.members, syncMemberSize)
				a := newMirrorArray(t, "ck"+lv.level+kind[:1], lv.level, members)
				mnt := t.TempDir()
				// No lazy init: its background writes would keep the check at its floor rate.
				sh(t, "mkfs.ext4", "-q", "-F", "-b", "4096", "-E", "lazy_itable_init=0,lazy_journal_init=0", a.dev)
				sh(t, "mount", a.dev, mnt)
				t.Cleanup(func() { cleanupUnmount(mnt) })
				file := filepath.Join(mnt, "live")
				sum := writeRandomFile(t, file, 3<<20)
				sh(t, "sync")
				exts := fileExtents(t, file)
				size := int64(3 << 20)
				l := examineLayout(t, members)

				// Rot one byte of the second copy (repair copies from the first) in the
				// middle of the file's first extent.
				off := exts[0].physical + exts[0].length/2 + 123
				sector := off &^ 511 // the map places whole sectors; one lies in one piece
				p := l.pieces(t, sector, 512)[0]
				require.GreaterOrEqual(t, p.N, 2)
				victim := p.Copies[1]
				old := l.readCopy(t, victim)
				rot := slices.Clone(old)
				rot[off-sector] ^= 0xff
				l.writeCopy(t, victim, rot)

				out := a.run("check", a.name, "--wait")
				st := a.status()
				require.NotNil(t, st.Sync.Last)
				assert.Equal(t, "check", st.Sync.Last.Action)
				assert.Equal(t, int64(1), st.Sync.Last.MismatchBytes, out)
				region := int(off / st.Regions.RegionBytes)
				assert.Equal(t, []int{region}, st.Sync.Last.MismatchRegions)
				assert.Contains(t, out, "check done")
				assert.Equal(t, rot, l.readCopy(t, victim), "a check changes nothing")
				assert.Contains(t, uraid(t, "detail", a.name), "Last Sync : check done")

				out = a.run("check", "--repair", "--max-rate", "64M", a.name, "--wait")
				st = a.status()
				assert.Equal(t, "repair", st.Sync.Last.Action, out)
				assert.Equal(t, int64(1), st.Sync.Last.MismatchBytes)
				assert.Positive(t, st.Sync.Last.RepairedBytes)
				assert.Equal(t, old, l.readCopy(t, victim), "repair rewrote the rotted copy from the first")

				a.run("check", a.name, "--wait")
				assert.Zero(t, a.status().Sync.Last.MismatchBytes, "a check after the repair finds nothing")

				// The file, read from each copy in turn, straight from the members.
				sh(t, "umount", mnt)
				uraid(t, "stop", a.name)
				for c := range 2 {
					h := sha256.New()
					for _, e := range exts {
						n := min(e.length, size-e.logical)
						for _, p := range l.pieces(t, e.physical, n) {
							h.Write(l.readCopy(t, p.Copies[c]))
						}
					}
					assert.Equal(t, sum, fmt.Sprintf("%x", h.Sum(nil)), "the file read from copy %d", c)
				}
			})
		}
	}
}

// TestE2ECheckAfterFstrimGarbage: on drives that return garbage for trimmed blocks (each its
// own), the copies of a mirror differ in every block ext4 has trimmed, and check, which leaves
// blocks discarded since the start out, reports no mismatch.
func TestE2ECheckAfterFstrimGarbage(t *testing.T) {
	uraidBin(t)
	for _, lv := range mirrorLevels {
		t.Run("raid"+lv.level, func(t *testing.T) {
			var members []string
			for i := range lv.members {
				// Small: each simulated drive is served by this (race-checked) process.
				_, p := startSimSSD(t, simssd.Config{Size: 32 << 20, Seed: uint64(100 + i), TrimGarbage: true})
				members = append(members, p)
			}
			a := newMirrorArray(t, "gb"+lv.level, lv.level, members)
			mnt := t.TempDir()
			// No lazy init: its background writes would keep the check at its floor rate.
			sh(t, "mkfs.ext4", "-q", "-F", "-E", "nodiscard,lazy_itable_init=0,lazy_journal_init=0", a.dev)
			sh(t, "mount", a.dev, mnt)
			t.Cleanup(func() { cleanupUnmount(mnt) })
			for i := range 6 {
				writeRandomFile(t, filepath.Join(mnt, fmt.Sprintf("f%d", i)), 1<<20+i*4096)
			}
			sh(t, "sync")
			for i := 0; i < 6; i += 2 {
				require.NoError(t, os.Remove(filepath.Join(mnt, fmt.Sprintf("f%d", i))))
			}
			sh(t, "sync")
			sh(t, "fstrim", "-v", mnt)
			require.Eventually(t, func() bool {
				st := a.status()
				q := 0
				for _, m := range st.Members {
					q += m.Discard.Queued + m.Discard.InFlight
				}
				return q == 0
			}, slow*time.Minute, 20*time.Millisecond, "the TRIMs did not drain")

			out := a.run("check", a.name, "--wait")
			st := a.status()
			assert.Equal(t, "check", st.Sync.Last.Action)
			assert.Positive(t, st.Sync.Last.DoneBytes)
			assert.Zero(t, st.Sync.Last.MismatchBytes, "check counted trimmed garbage: %s", out)

			// The garbage is there: read straight from the drives, the copies differ.
			sh(t, "umount", mnt)
			uraid(t, "stop", a.name)
			assert.Positive(t, examineLayout(t, members).differingBytes(t), "the drives returned the same bytes for trimmed blocks")
		})
	}
}

// TestE2EResyncResumesAfterSecondKill: a daemon killed while many regions are dirty leaves a
// resync, which a plain assemble starts (nothing had the device open); a reader keeps the
// array busy so the resync runs at its floor, and the daemon is killed again halfway. uraid
// recover resumes the resync where it was: the second run does not start over, the two runs
// together copy at most 1.2 times what one would, and the copies end byte-identical. The
// members are dm-delay devices whose writes take 25 ms once the resync is due, so that it
// surely runs long enough to be seen and interrupted on any machine.
func TestE2EResyncResumesAfterSecondKill(t *testing.T) {
	uraidBin(t)
	for _, lv := range mirrorLevels {
		t.Run("dm-raid"+lv.level, func(t *testing.T) {
			defer stallDump(t, t.Name(), slow*30*time.Second)()
			d := delayedMembers(t, lv.members, syncMemberSize)
			members := d.paths
			a := newMirrorArray(t, "rr"+lv.level, lv.level, members)

			// Random 4 KiB writes touch every region again and again, so many stay dirty.
			writer := testCommand(t, "fio", "--name=dirty", "--filename="+a.dev, "--rw=randwrite", "--bs=4k",
				"--ioengine=io_uring", "--iodepth=8", "--direct=1", "--time_based", "--runtime=600", "--randseed=3")
			var wout bytes.Buffer
			writer.Stdout, writer.Stderr = &wout, &wout
			require.NoError(t, writer.Start())
			st := a.status()
			require.Eventually(t, func() bool {
				st = a.status()
				return st.Regions.Dirty >= st.Regions.Regions/2
			}, slow*2*time.Minute, 50*time.Millisecond, "the writer did not dirty half the regions")
			// fio ends cleanly on SIGINT, with its writes done; the regions stay dirty for
			// seconds after their last write, long enough for the kill.
			require.NoError(t, writer.Process.Signal(os.Interrupt))
			_ = writer.Wait() // fio exits 128 after a signal; its report says whether a write failed
			require.Contains(t, wout.String(), "err= 0", "fio: %s", &wout)
			st = a.status()
			dirty := st.Regions.Dirty
			a.kill(st.PID)

			// Nothing holds the device: stop removes it, and assemble starts the array unclean.
			a.run("stop", a.name)
			d.setDelay(25 * time.Millisecond)
			out := a.run(append([]string{"assemble", a.name}, members...)...)
			a.dev = strings.TrimSpace(out)
			st = a.status()
			require.True(t, st.Unclean)
			require.NotNil(t, st.Sync)
			first := st.Sync.TotalBytes
			t.Logf("%d regions dirty at the kill; the resync after assemble has %d MiB to do", dirty, first>>20)
			require.Equal(t, "resync", st.Sync.Action, "assemble after an unclean end starts the resync")
			require.Positive(t, first)

			// A reader keeps the array busy: the resync keeps to its floor rate.
			// --thread: the job runs in fio's own process, so that killing it ends the reads.
			reader := testCommand(t, "fio", "--name=busy", "--filename="+a.dev, "--rw=randread", "--bs=4k",
				"--ioengine=io_uring", "--iodepth=1", "--direct=1", "--time_based", "--runtime=600", "--thread")
			require.NoError(t, reader.Start())
			readerDone := make(chan error, 1)
			go func() { readerDone <- reader.Wait() }()
			require.Eventually(t, func() bool {
				st = a.status()
				return st.Sync.Action == "resync" && st.Sync.DoneBytes >= first/4
			}, slow*5*time.Minute, 20*time.Millisecond, "the resync did not get a quarter done")
			require.Less(t, st.Sync.DoneBytes, st.Sync.TotalBytes, "the resync ended before the second kill")
			assert.Contains(t, uraid(t, "status", a.name), "resync = ", "status shows the progress")
			doneBefore := st.Sync.DoneBytes
			a.kill(st.PID)
			// The reader's reads wait on the quiesced device; it goes once they are served.
			require.NoError(t, reader.Process.Kill())

			out = a.run("recover", a.name)
			require.Equal(t, a.dev, strings.TrimSpace(out))
			<-readerDone
			st = a.waitSync("resync")
			second := st.Sync.Last.DoneBytes
			t.Logf("first run: %d of %d MiB before the second kill; resumed run: %d MiB (%.2fx of one resync in all)",
				doneBefore>>20, first>>20, second>>20, float64(doneBefore+second)/float64(first))
			assert.Less(t, second, first, "the resumed resync started over")
			assert.LessOrEqual(t, float64(doneBefore+second), 1.2*float64(first), "the two runs copied much more than one")
			uraid(t, "stop", a.name)
			assert.Zero(t, examineLayout(t, members).differingBytes(t), "the copies differ after the resumed resync")
		})
	}
}
