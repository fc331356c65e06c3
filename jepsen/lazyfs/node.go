package lazyfs

import (
	"context"
	"math"
	"path/filepath"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// node is a loopback node that tells the state before every change.
type node struct {
	fs.LoopbackNode
	s       *state
	persist bool // Options.FsyncPersistsName
}

func (n *node) path() string {
	return filepath.Join(n.RootData.Path, n.Path(n.Root()))
}

func (n *node) child(name string) string { return filepath.Join(n.path(), name) }

func errno(err error) syscall.Errno {
	if err == nil {
		return 0
	}
	return fs.ToErrno(err)
}

func (n *node) Create(ctx context.Context, name string, flags, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	if err := n.s.dirChange(n.path()); err != nil {
		return nil, nil, 0, errno(err)
	}
	ch, fh, ff, e := n.LoopbackNode.Create(ctx, name, flags&^unix.O_DIRECT, mode, out)
	if e != 0 {
		return ch, fh, ff, e
	}
	cn, ok := ch.Operations().(*node)
	if !ok {
		return ch, fh, ff, 0
	}
	return ch, cn.wrap(fh, flags), ff, 0
}

func (n *node) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if flags&unix.O_TRUNC != 0 && flags&unix.O_ACCMODE != unix.O_RDONLY && !n.s.isExempt(n.path()) {
		f, err := n.s.fileAt(n.path())
		if err != nil {
			return nil, 0, errno(err)
		}
		f.io.Lock()
		defer f.io.Unlock()
		if err := f.beforeCut(0, math.MaxInt64); err != nil {
			return nil, 0, errno(err)
		}
	}
	fh, ff, e := n.LoopbackNode.Open(ctx, flags&^unix.O_DIRECT)
	if e != 0 {
		return fh, ff, e
	}
	return n.wrap(fh, flags), ff, 0
}

func (n *node) wrap(fh fs.FileHandle, flags uint32) fs.FileHandle {
	lf, ok := fh.(*fs.LoopbackFile)
	if !ok {
		return fh
	}
	// Exempt files are wrapped too: a passthrough open of an inode that
	// also has cached opens fails with EIO in the kernel.
	return &file{LoopbackFile: lf, n: n, sync: flags&(unix.O_DSYNC|unix.O_DIRECT) != 0, exempt: n.s.isExempt(n.path())}
}

func (n *node) Mknod(ctx context.Context, name string, mode, rdev uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if err := n.s.dirChange(n.path()); err != nil {
		return nil, errno(err)
	}
	return n.LoopbackNode.Mknod(ctx, name, mode, rdev, out)
}

func (n *node) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if err := n.s.dirChange(n.path()); err != nil {
		return nil, errno(err)
	}
	return n.LoopbackNode.Mkdir(ctx, name, mode, out)
}

func (n *node) Symlink(ctx context.Context, target, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if err := n.s.dirChange(n.path()); err != nil {
		return nil, errno(err)
	}
	return n.LoopbackNode.Symlink(ctx, target, name, out)
}

func (n *node) Link(ctx context.Context, target fs.InodeEmbedder, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if err := n.s.dirChange(n.path()); err != nil {
		return nil, errno(err)
	}
	return n.LoopbackNode.Link(ctx, target, name, out)
}

func (n *node) Unlink(ctx context.Context, name string) syscall.Errno {
	if err := n.s.dirChange(n.path()); err != nil {
		return errno(err)
	}
	if _, err := n.s.preserve(n.child(name)); err != nil {
		return errno(err)
	}
	return n.LoopbackNode.Unlink(ctx, name)
}

func (n *node) Rmdir(ctx context.Context, name string) syscall.Errno {
	if err := n.s.dirChange(n.path()); err != nil {
		return errno(err)
	}
	p := n.child(name)
	if empty, err := isEmptyDir(p); err != nil || !empty {
		if err != nil {
			return errno(err)
		}
		return syscall.ENOTEMPTY
	}
	moved, err := n.s.preserve(p)
	if err != nil {
		return errno(err)
	}
	if moved {
		return 0
	}
	return n.LoopbackNode.Rmdir(ctx, name)
}

func (n *node) Rename(ctx context.Context, name string, newParent fs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	np, ok := newParent.(*node)
	if !ok {
		return syscall.EXDEV
	}
	if err := n.s.dirChange(n.path()); err != nil {
		return errno(err)
	}
	if err := n.s.dirChange(np.path()); err != nil {
		return errno(err)
	}
	// The replaced target goes away like an unlink (an exchange keeps
	// both; a no-replace rename replaces nothing).
	if flags&(unix.RENAME_EXCHANGE|unix.RENAME_NOREPLACE) == 0 {
		dst := np.child(newName)
		var st, sst unix.Stat_t
		if unix.Lstat(dst, &st) == nil && unix.Lstat(n.child(name), &sst) == nil {
			if sd, dd := sst.Mode&unix.S_IFMT == unix.S_IFDIR, st.Mode&unix.S_IFMT == unix.S_IFDIR; sd && !dd {
				return syscall.ENOTDIR
			} else if !sd && dd {
				return syscall.EISDIR
			}
		}
		if st.Mode&unix.S_IFMT == unix.S_IFDIR {
			if empty, err := isEmptyDir(dst); err != nil || !empty {
				if err != nil {
					return errno(err)
				}
				return syscall.ENOTEMPTY
			}
		}
		if _, err := n.s.preserve(dst); err != nil {
			return errno(err)
		}
	}
	// A durable file keeps its old name after a drop unless the source
	// directory is synced: it is linked into trash for that.
	if err := n.s.preserveFile(n.child(name)); err != nil {
		return errno(err)
	}
	return n.LoopbackNode.Rename(ctx, name, newParent, newName, flags)
}

func (n *node) Setattr(ctx context.Context, f fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	sz, ok := in.GetSize()
	if _, mine := f.(*file); !ok || mine || n.s.isExempt(n.path()) {
		return n.LoopbackNode.Setattr(ctx, f, in, out)
	}
	fst, err := n.s.fileAt(n.path())
	if err != nil {
		return errno(err)
	}
	fst.io.Lock()
	defer fst.io.Unlock()
	if err := fst.beforeCut(int64(sz), math.MaxInt64); err != nil {
		return errno(err)
	}
	return n.LoopbackNode.Setattr(ctx, f, in, out)
}

// CopyFileRange is refused so the kernel copies through Read and Write,
// which the state sees.
func (n *node) CopyFileRange(context.Context, fs.FileHandle, uint64, *fs.Inode, fs.FileHandle, uint64, uint64, uint64) (uint32, syscall.Errno) {
	return 0, syscall.ENOSYS
}

// dirStream is what the loopback's directory handle implements.
type dirStream interface {
	fs.FileReaddirenter
	fs.FileReleasedirer
	fs.FileSeekdirer
	fs.FileFsyncdirer
}

// dirHandle makes fsync of a directory make its listing durable.
type dirHandle struct {
	dirStream
	n *node
}

func (n *node) OpendirHandle(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	fh, ff, e := n.LoopbackNode.OpendirHandle(ctx, flags)
	if e != 0 {
		return fh, ff, e
	}
	ds, ok := fh.(dirStream)
	if !ok {
		return fh, ff, e
	}
	return &dirHandle{dirStream: ds, n: n}, ff, 0
}

func (d *dirHandle) Fsyncdir(context.Context, uint32) syscall.Errno {
	if err := d.n.s.dirSynced(d.n.path()); err != nil {
		return errno(err)
	}
	return errno(d.n.s.commitJournal())
}

func isEmptyDir(p string) (bool, error) {
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return false, err
	}
	defer unix.Close(fd)
	buf := make([]byte, 4096)
	for {
		n, err := unix.ReadDirent(fd, buf)
		if err != nil || n == 0 {
			return err == nil, err
		}
		_, _, names := unix.ParseDirent(buf[:n], -1, nil)
		if len(names) > 0 {
			return false, nil
		}
	}
}

// file is an open file whose changes the state sees first.
type file struct {
	*fs.LoopbackFile
	n      *node
	sync   bool // O_SYNC, O_DSYNC or O_DIRECT: each write is durable at once
	exempt bool // Options.Unbuffered: not tracked
}

// PassthroughFd refuses the kernel's FUSE passthrough: with it, reads
// and writes would go to the backing file without this process seeing them.
func (f *file) PassthroughFd() (int, bool) { return 0, false }

func (f *file) state() (*fileState, syscall.Errno) {
	fd, ok := f.LoopbackFile.PassthroughFd()
	if !ok {
		return nil, syscall.EBADF
	}
	st, err := f.n.s.file(fd)
	return st, errno(err)
}

func (f *file) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	return f.Writev(ctx, [][]byte{data}, off)
}

func (f *file) Writev(ctx context.Context, data [][]byte, off int64) (uint32, syscall.Errno) {
	if f.exempt {
		return f.LoopbackFile.Writev(ctx, data, off)
	}
	st, e := f.state()
	if e != 0 {
		return 0, e
	}
	total := 0
	for _, d := range data {
		total += len(d)
	}
	st.io.RLock()
	defer st.io.RUnlock()
	if err := st.beforeChange(off, off+int64(total)); err != nil {
		return 0, errno(err)
	}
	var n uint32
	if len(data) == 1 {
		n, e = f.LoopbackFile.Write(ctx, data[0], off)
	} else {
		n, e = f.LoopbackFile.Writev(ctx, data, off)
	}
	if f.sync && n > 0 {
		var flat []byte
		for _, d := range data {
			flat = append(flat, d...)
		}
		if err := st.syncedWrite(off, flat[:n]); err != nil && e == 0 {
			e = errno(err)
		}
	}
	return n, e
}

func (f *file) Setattr(ctx context.Context, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	sz, ok := in.GetSize()
	if !ok || f.exempt {
		return f.LoopbackFile.Setattr(ctx, in, out)
	}
	st, e := f.state()
	if e != 0 {
		return e
	}
	st.io.Lock()
	defer st.io.Unlock()
	if err := st.beforeCut(int64(sz), math.MaxInt64); err != nil {
		return errno(err)
	}
	return f.LoopbackFile.Setattr(ctx, in, out)
}

func (f *file) Allocate(ctx context.Context, off, size uint64, mode uint32) syscall.Errno {
	if f.exempt {
		return f.LoopbackFile.Allocate(ctx, off, size, mode)
	}
	st, e := f.state()
	if e != 0 {
		return e
	}
	st.io.Lock()
	defer st.io.Unlock()
	end := int64(off + size)
	if mode&(unix.FALLOC_FL_COLLAPSE_RANGE|unix.FALLOC_FL_INSERT_RANGE) != 0 {
		end = math.MaxInt64 // everything after off moves
	}
	switch {
	case mode&(unix.FALLOC_FL_COLLAPSE_RANGE|unix.FALLOC_FL_INSERT_RANGE) != 0:
		if err := st.beforeChange(int64(off), end); err != nil {
			return errno(err)
		}
	case mode&(unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_ZERO_RANGE) != 0:
		if err := st.beforeCut(int64(off), end); err != nil {
			return errno(err)
		}
	}
	if e := f.LoopbackFile.Allocate(ctx, off, size, mode); e != 0 {
		return e
	}
	if mode&(unix.FALLOC_FL_KEEP_SIZE|unix.FALLOC_FL_COLLAPSE_RANGE|unix.FALLOC_FL_INSERT_RANGE|unix.FALLOC_FL_PUNCH_HOLE) == 0 {
		st.allocated(end) // the new size: durable at the next journal commit (state.commitJournal)
	}
	return 0
}

// Fsync (and fdatasync) makes the file's data and size durable; the
// backing file itself is not synced (see the package doc).
func (f *file) Fsync(ctx context.Context, flags uint32) syscall.Errno {
	if f.exempt {
		return 0
	}
	st, e := f.state()
	if e != 0 {
		return e
	}
	st.io.Lock()
	err := st.synced()
	st.io.Unlock()
	if err == nil {
		err = f.n.s.commitJournal()
	}
	if err != nil {
		return errno(err)
	}
	if f.n.persist {
		return errno(f.n.persistNames())
	}
	return 0
}

// persistNames makes the node's current name durable, and its
// directory's, up to the root (ext4 commits the journal, which holds
// them all, on any fsync).
func (n *node) persistNames() error {
	for cur := n; ; {
		name, parent := cur.Parent()
		if parent == nil {
			return nil
		}
		pn, ok := parent.Operations().(*node)
		if !ok {
			return nil
		}
		var st unix.Stat_t
		if err := unix.Lstat(cur.path(), &st); err != nil {
			return err
		}
		if err := n.s.nameSynced(pn.path(), name, entry{ino: st.Ino, dir: st.Mode&unix.S_IFMT == unix.S_IFDIR}); err != nil {
			return err
		}
		cur = pn
	}
}
