package tests

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"uraid/array"
)

// The healing suite proves, against the kernel, three fixes of the robustness work: a rebuild
// that races writes into trimmed regions keeps them, a refused fail costs no request anything,
// and assemble refuses a member whose size does not fit the array, writing nothing.

// fioVerifyJob writes every block of dev with checksums at random, 4 KiB to 64 KiB, and verifies.
func fioVerifyJob(dev, size string, extra ...string) []string {
	return append([]string{"--name=heal", "--filename=" + dev, "--rw=randwrite", "--bsrange=4k-64k",
		"--size=" + size, "--ioengine=io_uring", "--iodepth=16", "--direct=1",
		"--verify=crc32c", "--verify_fatal=1", "--randseed=20", "--group_reporting"}, extra...)
}

// TestE2ERebuildTrimRace rebuilds a member of a freshly trimmed raid10 while fio writes all over
// it, then makes each rebuilt copy the only one and verifies every block: writes that landed in
// a region just before the rebuild took it for trimmed are on the new member.
func TestE2ERebuildTrimRace(t *testing.T) {
	uraidBin(t)
	members, _ := memberSet(t, "loop", 4, 64<<20)
	name := "healrace"
	dev := strings.TrimSpace(uraid(t, append([]string{"create", name, "--level", "10", "--discard", "async"}, members...)...))
	t.Cleanup(func() { cleanupRun(uraidBin(t), "stop", name) })
	uraid(t, "fail", name, members[1])
	uraid(t, "remove", name, members[1])
	fresh, _ := memberSet(t, "loop", 1, 64<<20)
	fio := testCommand(t, "fio", fioVerifyJob(dev, "100M")...)
	out := &strings.Builder{}
	fio.Stdout, fio.Stderr = out, out
	require.NoError(t, fio.Start())
	uraid(t, "add", name, fresh[0]) // rebuilds while fio writes into trimmed regions
	require.NoError(t, fio.Wait(), out.String())
	require.Contains(t, out.String(), "err= 0", out.String())
	uraid(t, "wait", name)
	// Member 0's only partner is now the rebuilt one: verify every block from it.
	uraid(t, "fail", name, members[0])
	vout := sh(t, "fio", fioVerifyJob(dev, "100M", "--verify_only")...)
	assert.Contains(t, vout, "err= 0", vout)
}

// TestE2ERefusedFailUnderLoad asks, a hundred times while fio writes and verifies, to fail the
// member of a degraded raid10 that holds the last copy of its chunks: every ask is refused, and
// fio sees no error.
func TestE2ERefusedFailUnderLoad(t *testing.T) {
	uraidBin(t)
	members, _ := memberSet(t, "loop", 4, 64<<20)
	name := "healrefuse"
	dev := strings.TrimSpace(uraid(t, append([]string{"create", name, "--level", "10"}, members...)...))
	t.Cleanup(func() { cleanupRun(uraidBin(t), "stop", name) })
	uraid(t, "fail", name, members[1])
	fio := testCommand(t, "fio", fioVerifyJob(dev, "100M", "--loops=3")...)
	out := &strings.Builder{}
	fio.Stdout, fio.Stderr = out, out
	require.NoError(t, fio.Start())
	done := make(chan error, 1)
	go func() { done <- fio.Wait() }()
	refused := 0
	for running := true; running; {
		select {
		case err := <-done:
			require.NoError(t, err, out.String())
			running = false
		default:
			o, err := uraidCode(t, "fail", name, members[0])
			require.Equal(t, 1, exitStatus(err), o)
			require.Contains(t, o, "last copy", o)
			refused++
		}
	}
	t.Logf("%d refused fails while fio ran", refused)
	assert.Greater(t, refused, 0)
	assert.Contains(t, out.String(), "err= 0", out.String())
	dout, err := uraidCode(t, "detail", "--json", "--test", name)
	require.Equal(t, 1, exitStatus(err), dout) // --test: degraded
	var st array.Status
	require.NoError(t, json.Unmarshal([]byte(dout), &st), dout)
	assert.Equal(t, "active", st.Members[0].State)
}

func fileDigest(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return fmt.Sprintf("%x", sha256.Sum256(b))
}

// TestE2EAssembleRefusesShortMember: a member file cut short of the array's data area is refused
// at assemble, by name, with what to do, and no member is written.
func TestE2EAssembleRefusesShortMember(t *testing.T) {
	uraidBin(t)
	members, _ := memberSet(t, "file", 2, 64<<20)
	name := "healshort"
	uraid(t, append([]string{"create", name, "--level", "1"}, members...)...)
	uraid(t, "stop", name)
	require.NoError(t, os.Truncate(members[1], 48<<20))
	before := []string{fileDigest(t, members[0]), fileDigest(t, members[1])}
	out, err := uraidCode(t, append([]string{"assemble", name}, members...)...)
	t.Cleanup(func() { cleanupRun(uraidBin(t), "stop", name) })
	require.Error(t, err, out)
	assert.Contains(t, out, "too small", out)
	assert.Contains(t, out, members[1], out)
	assert.Contains(t, out, "leave it out", out)
	assert.Equal(t, before, []string{fileDigest(t, members[0]), fileDigest(t, members[1])}, "a refused assemble wrote to a member")
}
