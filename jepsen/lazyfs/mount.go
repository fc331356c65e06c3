package lazyfs

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// Errors.
var (
	// ErrUnsupported: no /dev/fuse, not root, or the mount(2) was refused.
	ErrUnsupported = errors.New("lazyfs: FUSE not usable here")
	// ErrNotMounted: the FS was unmounted (or a remount failed).
	ErrNotMounted = errors.New("lazyfs: not mounted")
)

// Options of a mount; the zero value is valid.
type Options struct {
	// FsyncPersistsName: fsync of a file also makes its current name,
	// and its directories' up to the root, durable (as ext4 and XFS do
	// in practice).
	// Off (the default, as Jepsen's LazyFS and POSIX): only fsync of the
	// directory does.
	FsyncPersistsName bool
	// Unbuffered are base names (e.g. "error.log") whose writes are
	// durable at once and whose names a drop leaves alone: diagnostics a
	// test wants to read after the power loss, never recovery state.
	Unbuffered []string
	// TrashDir keeps the inodes a drop may put back. It must be on the
	// backing directory's filesystem; default: backing + ".lazyfs-trash".
	TrashDir string
}

// FS is one mounted lazy filesystem. Its methods are safe for concurrent
// use, but DropUnsynced must not race with processes using the mount.
type FS struct {
	mountpoint, backing string
	o                   Options
	s                   *state

	mu     sync.Mutex
	server *fuse.Server // nil once unmounted
}

// Supported reports why FUSE cannot be mounted here, or nil.
func Supported() error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("%w: needs root (mount(2) of /dev/fuse)", ErrUnsupported)
	}
	f, err := os.OpenFile("/dev/fuse", os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrUnsupported, err)
	}
	f.Close()
	return nil
}

// Mount serves backing at mountpoint (both directories must exist; the
// mountpoint is hidden while mounted). Everything backing holds now is
// durable.
func Mount(mountpoint, backing string, o Options) (*FS, error) {
	if err := Supported(); err != nil {
		return nil, err
	}
	var err error
	if mountpoint, err = filepath.Abs(mountpoint); err != nil {
		return nil, err
	}
	if backing, err = filepath.Abs(backing); err != nil {
		return nil, err
	}
	if o.TrashDir == "" {
		o.TrashDir = backing + ".lazyfs-trash"
	}
	if err := os.MkdirAll(o.TrashDir, 0o700); err != nil {
		return nil, err
	}
	var a, b unix.Stat_t
	if err := unix.Stat(backing, &a); err != nil {
		return nil, err
	}
	if err := unix.Stat(o.TrashDir, &b); err != nil {
		return nil, err
	}
	if a.Dev != b.Dev {
		return nil, fmt.Errorf("lazyfs: trash %s is not on the filesystem of %s", o.TrashDir, backing)
	}
	f := &FS{mountpoint: mountpoint, backing: backing, o: o, s: newState(o.TrashDir, o.Unbuffered)}
	if err := f.s.reset(); err != nil { // a trash left by a killed harness
		return nil, err
	}
	if err := f.mount(); err != nil {
		return nil, err
	}
	return f, nil
}

func (f *FS) mount() error {
	var st syscall.Stat_t
	if err := syscall.Stat(f.backing, &st); err != nil {
		return err
	}
	root := &fs.LoopbackRoot{Path: f.backing, Dev: uint64(st.Dev)}
	root.NewNode = func(rd *fs.LoopbackRoot, _ *fs.Inode, _ string, _ *syscall.Stat_t) fs.InodeEmbedder {
		return &node{LoopbackNode: fs.LoopbackNode{RootData: rd}, s: f.s, persist: f.o.FsyncPersistsName}
	}
	root.RootNode = root.NewNode(root, nil, "", &st)
	// Every change goes through this mount and a drop remounts, so the
	// kernel's caches never go stale: keep them long. That also keeps a
	// fork of the serving process from needing it (see warm).
	cache := time.Hour
	srv, err := fs.Mount(f.mountpoint, root.RootNode, &fs.Options{
		MountOptions: fuse.MountOptions{
			AllowOther: true, // MariaDB runs as its own user
			// The kernel checks modes: the server runs as root.
			Options:           []string{"default_permissions"},
			FsName:            f.backing,
			Name:              "lazyfs",
			DirectMountStrict: true,      // no fusermount needed as root
			MaxWrite:          512 << 10, // a reply (data + header) must fit a 1 MiB pipe for splice
			MaxBackground:     64,
		},
		EntryTimeout: &cache, AttrTimeout: &cache,
	})
	if err != nil {
		return fmt.Errorf("%w: mount %s: %w", ErrUnsupported, f.mountpoint, err)
	}
	f.mu.Lock()
	f.server = srv
	f.mu.Unlock()
	return warm(f.mountpoint)
}

// warm caches the mount root's attributes in the kernel. A child forked
// by the process serving the mount (os/exec with Dir on it: localcluster
// starts binlogd so) checks them in chdir before its exec; if that needed
// a FUSE round trip while the Go runtime stops the world (it waits for
// the forking thread, suspended until the child execs), neither would
// ever go on.
func warm(dir string) error {
	_, err := os.Stat(dir)
	return err
}

// Mountpoint is where the filesystem is mounted.
func (f *FS) Mountpoint() string { return f.mountpoint }

// Backing is the directory holding the files.
func (f *FS) Backing() string { return f.backing }

// Stats tells what a drop now would undo.
func (f *FS) Stats() Stats { return f.s.stats() }

// Checkpoint makes everything durable, as sync(2) would.
func (f *FS) Checkpoint() error { return f.s.reset() }

// DropUnsynced is the power loss: the mount goes away (its FUSE
// connection is aborted, so descriptors still open on it, also in other
// mount namespaces, fail with ENOTCONN), the backing directory is put
// back to exactly what was durable, and a fresh mount comes up at the
// same place, with empty kernel caches, as after a reboot. Kill every
// process using the mount first: one that still writes races with the
// revert.
func (f *FS) DropUnsynced() (Dropped, error) {
	if err := f.down(); err != nil {
		return Dropped{}, err
	}
	d, err := f.s.revert()
	if err != nil {
		slog.Warn("lazyfs: revert", "backing", f.backing, "err", err)
	}
	if merr := f.mount(); merr != nil {
		return d, errors.Join(err, merr)
	}
	slog.Info("lazyfs: dropped unsynced state", "mount", f.mountpoint, "files", d.Files, "bytes", d.Bytes,
		"dirs", d.Dirs, "names", d.Moved)
	return d, err
}

// Unmount takes the filesystem down, leaving the backing directory as it
// is (unsynced writes included). Idempotent.
func (f *FS) Unmount() error {
	if err := f.down(); err != nil && !errors.Is(err, ErrNotMounted) {
		return err
	}
	return f.s.reset()
}

// down aborts the FUSE connection, unmounts and waits for the server.
func (f *FS) down() error {
	f.mu.Lock()
	srv := f.server
	f.server = nil
	f.mu.Unlock()
	if srv == nil {
		return ErrNotMounted
	}
	abortErr := f.abort()
	err := srv.Unmount()
	if err != nil {
		// Busy in this namespace: detach it; the aborted connection
		// answers nothing, so the server's loops end.
		err = unix.Unmount(f.mountpoint, unix.MNT_DETACH)
	}
	if err != nil {
		return fmt.Errorf("lazyfs: unmount %s: %w (abort: %v)", f.mountpoint, err, abortErr)
	}
	srv.Wait()
	return nil
}

// abort ends the mount's FUSE connection through fusectl. Without it, a
// copy of the mount in another mount namespace (every `ip netns exec`
// makes one) keeps the connection and the server alive after unmount.
func (f *FS) abort() error {
	const ctl = "/sys/fs/fuse/connections"
	if _, err := os.Stat(filepath.Join(ctl, "..")); err == nil {
		if ents, _ := os.ReadDir(ctl); len(ents) == 0 {
			_ = exec.Command("mount", "-t", "fusectl", "none", ctl).Run()
		}
	}
	var st unix.Stat_t
	if err := unix.Stat(f.mountpoint, &st); err != nil {
		return err
	}
	// The connection is named by the mount's device minor.
	p := filepath.Join(ctl, strconv.FormatUint(uint64(unix.Minor(st.Dev)), 10), "abort")
	return os.WriteFile(p, []byte("1"), 0o200)
}
