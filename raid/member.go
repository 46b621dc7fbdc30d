package raid

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Member is an open member disk: a block device or a regular file.
type Member struct {
	Path string
	File *os.File
	// Block is true for a block device, false for a regular file.
	Block bool
	// Size is the whole member in bytes, superblock area included.
	Size int64
	// LogicalBlock is the smallest unit of direct I/O, in bytes.
	LogicalBlock int64
	// Direct is true when File was opened with O_DIRECT. Filesystems that refuse O_DIRECT
	// (tmpfs before 6.6, some FUSE) get buffered I/O, made durable by fdatasync on flush.
	Direct bool
	// DiscardGranularity and DiscardAlignment say which member byte ranges a discard may cover, in
	// bytes from the start of the member; DiscardGranularity 0 means no discard support.
	DiscardGranularity, DiscardAlignment int64
	// DiscardMax is the largest single discard the member takes, in bytes.
	DiscardMax int64
	// Rotational is the kernel's rotational flag: a hint that TRIMs serialize on this member.
	Rotational bool
	// ATA is true for a block device on a libata port (SATA, PATA): most such SSDs stall reads
	// and writes while they trim. See onATA.
	ATA bool
}

// Errors that explain why a member cannot be used.
var (
	// ErrMemberBusy means another program holds the member: it is mounted, part of md or dm, or
	// served by another uraid daemon.
	ErrMemberBusy = errors.New("member is in use")
	// ErrMemberKind means the path is neither a block device nor a regular file.
	ErrMemberKind = errors.New("not a block device or regular file")
)

// BusyWait is how long OpenMember waits for a member another holder has: one that is going away
// lets go within it. A process's io_uring rings are torn down after it closes them (or exits),
// and until the requests in them end they keep the device open, its lock and O_EXCL claim with
// it: a successor, or an add right after a remove, would find it busy for that moment.
var BusyWait = 2 * time.Second

const busyPoll = 10 * time.Millisecond

// busySleep is the pause between tries at a busy member; a test swaps it to see a try wait.
var busySleep = time.Sleep

// OpenMember opens path for array I/O and probes its size and discard support. A block device is
// opened O_EXCL, so the kernel refuses it while it is mounted or claimed by md, dm or another
// uraid; a regular file is locked with flock for the same reason.
func OpenMember(path string) (*Member, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("member %s: %w", path, err)
	}
	m := &Member{Path: path}
	flags := os.O_RDWR | unix.O_CLOEXEC
	switch mode := fi.Mode(); {
	case mode&os.ModeDevice != 0 && mode&os.ModeCharDevice == 0:
		m.Block = true
		flags |= unix.O_EXCL
	case mode.IsRegular():
	default:
		return nil, fmt.Errorf("member %s: %w (it is %v)", path, ErrMemberKind, mode.Type())
	}
	var f *os.File
	var direct bool
	for wait := time.Now().Add(BusyWait); ; busySleep(busyPoll) {
		f, direct, err = openDirect(path, flags)
		if !m.Block || !errors.Is(err, unix.EBUSY) || time.Now().After(wait) {
			break
		}
	}
	if err != nil {
		if m.Block && errors.Is(err, unix.EBUSY) {
			return nil, fmt.Errorf("member %s: %w: %s", path, ErrMemberBusy, busyReason(fi))
		}
		return nil, fmt.Errorf("member %s: %w", path, err)
	}
	m.File, m.Direct = f, direct
	if err := m.probe(); err != nil {
		f.Close()
		return nil, fmt.Errorf("member %s: %w", path, err)
	}
	return m, nil
}

func openDirect(path string, flags int) (*os.File, bool, error) {
	f, err := os.OpenFile(path, flags|unix.O_DIRECT, 0)
	if err == nil {
		return f, true, nil
	}
	if !errors.Is(err, unix.EINVAL) {
		return nil, false, err
	}
	f, err = os.OpenFile(path, flags, 0)
	return f, false, err
}

func (m *Member) probe() error {
	fd := int(m.File.Fd())
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return os.NewSyscallError("fstat", err)
	}
	if !m.Block {
		err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB)
		for wait := time.Now().Add(BusyWait); errors.Is(err, unix.EWOULDBLOCK) && time.Now().Before(wait); {
			busySleep(busyPoll)
			err = unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB)
		}
		if err != nil {
			if errors.Is(err, unix.EWOULDBLOCK) {
				return fmt.Errorf("%w: another uraid process holds it (see uraid list)", ErrMemberBusy)
			}
			return os.NewSyscallError("flock", err)
		}
		m.Size = st.Size
		m.LogicalBlock = 512
		// Punching holes frees whole filesystem blocks only; a partial block is zeroed, which
		// costs a write and frees nothing.
		m.DiscardGranularity = int64(st.Blksize)
		m.DiscardMax = 1 << 62
		return nil
	}
	size, err := unix.IoctlGetUint64(fd, unix.BLKGETSIZE64)
	if err != nil {
		return os.NewSyscallError("ioctl BLKGETSIZE64", err)
	}
	m.Size = int64(size)
	lbs, err := unix.IoctlGetInt(fd, unix.BLKSSZGET)
	if err != nil {
		return os.NewSyscallError("ioctl BLKSSZGET", err)
	}
	m.LogicalBlock = int64(lbs)
	q := queueDir(st.Rdev)
	m.DiscardMax = sysfsInt(filepath.Join(q, "discard_max_bytes"))
	if m.DiscardMax > 0 {
		m.DiscardGranularity = max(sysfsInt(filepath.Join(q, "discard_granularity")), m.LogicalBlock)
		m.DiscardAlignment = sysfsInt(filepath.Join(sysDev(st.Rdev), "discard_alignment"))
	}
	m.Rotational = sysfsInt(filepath.Join(q, "rotational")) == 1
	m.ATA = probeATA(st.Rdev)
	return nil
}

func sysDev(rdev uint64) string {
	return fmt.Sprintf("/sys/dev/block/%d:%d", unix.Major(rdev), unix.Minor(rdev))
}

// queueDir is the request queue of a block device; a partition shares its disk's.
func queueDir(rdev uint64) string {
	d := sysDev(rdev)
	if _, err := os.Stat(filepath.Join(d, "partition")); err == nil {
		return filepath.Join(d, "..", "queue")
	}
	return filepath.Join(d, "queue")
}

func sysfsInt(path string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	v, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return v
}

// busyReason says who holds a block device, as far as it can tell.
func busyReason(fi os.FileInfo) string {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return "open exclusively by another program"
	}
	rdev := uint64(st.Rdev)
	maj, min := unix.Major(rdev), unix.Minor(rdev)
	if mp := mountPoint(maj, min); mp != "" {
		return fmt.Sprintf("mounted at %s; unmount it first", mp)
	}
	if holders, _ := os.ReadDir(filepath.Join(sysDev(rdev), "holders")); len(holders) > 0 {
		return fmt.Sprintf("held by %s (md, dm or another array); stop that first", holders[0].Name())
	}
	return "open exclusively by another program (a mounted filesystem, md, dm or a uraid daemon); stop it first"
}

// mountPoint returns where the block device maj:min is mounted, or "".
func mountPoint(maj, min uint32) string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	want := fmt.Sprintf("%d:%d", maj, min)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 4 && fields[2] == want {
			return fields[4]
		}
	}
	return ""
}

// Close releases the member (and its exclusive claim).
func (m *Member) Close() error { return m.File.Close() }
