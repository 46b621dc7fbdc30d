package testutil

import (
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestOnlyTestsImportTestutil: no file of the module but a _test.go file, or a file of
// testutil's own, imports testutil or a subpackage of it.
func TestOnlyTestsImportTestutil(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	_, err = os.Stat(filepath.Join(root, "go.mod"))
	require.NoError(t, err, "the module root is two levels up")
	own, err := filepath.Abs(".")
	require.NoError(t, err)
	fset := token.NewFileSet()
	files := 0
	require.NoError(t, filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p == own || p != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		files++
		f, err := parser.ParseFile(fset, p, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if path == "uraid/internal/testutil" || strings.HasPrefix(path, "uraid/internal/testutil/") {
				t.Errorf("%s imports %s, which is for _test.go files only", p, path)
			}
		}
		return nil
	}))
	assert.Greater(t, files, 100, "the walk found the module's files")
}

// fakeTB records what a helper would fail a test with.
type fakeTB struct {
	testing.TB
	failed, skipped string
}

func (f *fakeTB) Helper()          {}
func (f *fakeTB) Skip(args ...any) { f.skipped = fmt.Sprint(args...) }
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.failed = fmt.Sprintf(format, args...)
}

func TestWaitForSeesTheStateCome(t *testing.T) {
	f := &fakeTB{TB: t}
	n := 0
	WaitFor(f, "the third look", func() bool { n++; return n == 3 })
	assert.Empty(t, f.failed)
	assert.Equal(t, 3, n, "WaitFor looks again until the state comes, and stops then")
}

func TestWaitForFailsNamingWhatNeverCame(t *testing.T) {
	f := &fakeTB{TB: t}
	start := time.Now()
	WaitForWithin(f, 20*time.Millisecond, "the moon to turn blue", func() bool { return false })
	assert.GreaterOrEqual(t, time.Since(start), 20*time.Millisecond, "gave up before its bound")
	assert.Contains(t, f.failed, "the moon to turn blue")
	assert.Contains(t, f.failed, "20ms")

	f = &fakeTB{TB: t}
	WaitForNoError(f, 20*time.Millisecond, "a quiet disk", func() error { return errors.New("3 TRIMs queued") })
	assert.Contains(t, f.failed, "a quiet disk")
	assert.Contains(t, f.failed, "3 TRIMs queued", "the last error says how far the state got")
}

func TestReceive(t *testing.T) {
	ch := make(chan int, 1)
	ch <- 7
	assert.Equal(t, 7, Receive(t, ch, "a seven"))

	f := &fakeTB{TB: t}
	assert.Zero(t, receiveWithin(f, 20*time.Millisecond, ch, "a second seven"))
	assert.Contains(t, f.failed, "a second seven")
	assert.Contains(t, f.failed, "20ms")
}

func TestAllocatedCountsWrittenBytes(t *testing.T) {
	dir := t.TempDir()
	a := SparseFile(t, dir, "a", 1<<20)
	b := SparseFile(t, dir, "b", 1<<20)
	fi, err := os.Stat(a)
	require.NoError(t, err)
	assert.EqualValues(t, 1<<20, fi.Size())
	before := Allocated(t, a, b)
	require.NoError(t, os.WriteFile(b, make([]byte, 64<<10), 0))
	assert.GreaterOrEqual(t, Allocated(t, a, b), before+64<<10)
	assert.Equal(t, Allocated(t, a)+Allocated(t, b), Allocated(t, a, b), "the files' bytes together")
}

func TestNeedFUSESkipsUnlessARunRequiresIt(t *testing.T) {
	t.Setenv("URAID_ROBUST", "")
	f := &fakeTB{TB: t}
	NeedFUSE(f)
	assert.Contains(t, f.skipped, "URAID_ROBUST=1")

	t.Setenv("URAID_ROBUST", "1")
	f = &fakeTB{TB: t}
	NeedFUSE(f)
	assert.Empty(t, f.skipped, "a run that requires the tests does not skip them")
	_, err := os.Stat("/dev/fuse")
	if err != nil || os.Geteuid() != 0 {
		assert.Contains(t, f.failed, "FUSE is not usable here", "nor passes without them")
	} else {
		assert.Empty(t, f.failed)
	}
}
