package simdisk

import (
	"syscall"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// rawFS is the FUSE face of an FS: a flat directory of disk files, direct I/O only (no page
// cache between the array and the disk model).
type rawFS struct {
	fuse.RawFileSystem
	fs *diskFS
}

func (r *rawFS) attr(d *Disk, a *fuse.Attr) {
	a.Ino = d.ino
	a.Size = uint64(d.size)
	a.Blocks = uint64(d.size / 512)
	a.Mode = syscall.S_IFREG | 0o600
	a.Nlink = 1
	a.Blksize = Sector
}

func (r *rawFS) Lookup(cancel <-chan struct{}, h *fuse.InHeader, name string, out *fuse.EntryOut) fuse.Status {
	if h.NodeId != fuse.FUSE_ROOT_ID {
		return fuse.ENOENT
	}
	r.fs.mu.RLock()
	d, ok := r.fs.disks[name]
	r.fs.mu.RUnlock()
	if !ok {
		return fuse.ENOENT
	}
	out.NodeId = d.ino
	r.attr(d, &out.Attr)
	return fuse.OK
}

func (r *rawFS) Forget(nodeid, nlookup uint64) {}

func (r *rawFS) GetAttr(cancel <-chan struct{}, in *fuse.GetAttrIn, out *fuse.AttrOut) fuse.Status {
	if in.NodeId == fuse.FUSE_ROOT_ID {
		out.Ino = fuse.FUSE_ROOT_ID
		out.Mode = syscall.S_IFDIR | 0o755
		out.Nlink = 2
		return fuse.OK
	}
	r.fs.mu.RLock()
	d, ok := r.fs.byIno[in.NodeId]
	r.fs.mu.RUnlock()
	if !ok {
		return fuse.ENOENT
	}
	r.attr(d, &out.Attr)
	return fuse.OK
}

func (r *rawFS) Open(cancel <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	h, st := r.fs.open(in.NodeId)
	if st != fuse.OK {
		return st
	}
	out.Fh = h
	// Direct I/O: every read and write reaches the model. No flush on close: a process must be
	// able to close (or die with) files on its own mount without waiting for itself.
	out.OpenFlags = fuse.FOPEN_DIRECT_IO | fuse.FOPEN_NOFLUSH
	return fuse.OK
}

func (r *rawFS) Release(cancel <-chan struct{}, in *fuse.ReleaseIn) { r.fs.release(in.Fh) }

func (r *rawFS) Flush(cancel <-chan struct{}, in *fuse.FlushIn) fuse.Status { return fuse.OK }

func (r *rawFS) Read(cancel <-chan struct{}, in *fuse.ReadIn, buf []byte) (fuse.ReadResult, fuse.Status) {
	n, err := r.fs.do(in.Fh, Op{Kind: Read, Off: int64(in.Offset), Len: int64(in.Size)}, buf[:in.Size])
	if err != nil {
		return nil, fuse.ToStatus(err)
	}
	return fuse.ReadResultData(buf[:n]), fuse.OK
}

func (r *rawFS) Write(cancel <-chan struct{}, in *fuse.WriteIn, data []byte) (uint32, fuse.Status) {
	fua := in.Flags&syscall.O_DSYNC != 0 // pwritev2 RWF_DSYNC and O_DSYNC files arrive so
	n, err := r.fs.do(in.Fh, Op{Kind: Write, Off: int64(in.Offset), Len: int64(len(data)), FUA: fua}, data)
	if err != nil {
		return 0, fuse.ToStatus(err)
	}
	return uint32(n), fuse.OK
}

func (r *rawFS) Fsync(cancel <-chan struct{}, in *fuse.FsyncIn) fuse.Status {
	_, err := r.fs.do(in.Fh, Op{Kind: Flush}, nil)
	return fuse.ToStatus(err)
}

func (r *rawFS) Fallocate(cancel <-chan struct{}, in *fuse.FallocateIn) fuse.Status {
	const punch = 0x2 | 0x1 // FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE
	if in.Mode != punch {
		return fuse.ENOSYS
	}
	_, err := r.fs.do(in.Fh, Op{Kind: Punch, Off: int64(in.Offset), Len: int64(in.Length)}, nil)
	return fuse.ToStatus(err)
}

func (r *rawFS) SetAttr(cancel <-chan struct{}, in *fuse.SetAttrIn, out *fuse.AttrOut) fuse.Status {
	// Disks have a fixed size; a truncate to it (a member file "made" by create) changes nothing.
	r.fs.mu.RLock()
	d, ok := r.fs.byIno[in.NodeId]
	r.fs.mu.RUnlock()
	if !ok {
		return fuse.ENOENT
	}
	if sz, ok := in.GetSize(); ok && int64(sz) != d.size {
		return fuse.Status(syscall.EPERM)
	}
	r.attr(d, &out.Attr)
	return fuse.OK
}
