package lazyfs

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
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
	// ErrServerLost: the helper process serving the mount died or did
	// not answer in Options.Timeout; the mount was taken down (its FUSE
	// connection aborted, lazily unmounted) and the helper killed.
	ErrServerLost = errors.New("lazyfs: server lost")
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

	// Server is the command that serves the mount (ServeMain's flags
	// are appended); default: this executable with "lazyfs-serve" (cmd/jepsen
	// has that subcommand; a test binary's TestMain can call ServeMain).
	Server []string
	// Control is the server's unix socket; default: backing +
	// ".lazyfs.sock" (a temporary directory if that is too long).
	Control string
	// Log receives the server's log; default: backing + ".lazyfs.log".
	Log string
	// Timeout bounds each request to the server (a drop reverts the
	// backing directory, so it is generous); default 2 minutes.
	Timeout time.Duration
}

// maxSockPath: sun_path holds 108 bytes with its NUL.
const maxSockPath = 100

// withDefaults fills the zero fields; mountpoint and backing are absolute.
func (o Options) withDefaults(backing string) (Options, error) {
	if o.TrashDir == "" {
		o.TrashDir = backing + ".lazyfs-trash"
	}
	if len(o.Server) == 0 {
		exe, err := os.Executable()
		if err != nil {
			return o, fmt.Errorf("lazyfs: no server command: %w", err)
		}
		o.Server = []string{exe, "lazyfs-serve"}
	}
	if o.Control == "" && len(backing)+len(".lazyfs.sock") <= maxSockPath {
		o.Control = backing + ".lazyfs.sock"
	} // else Mount makes a temporary directory for it
	if len(o.Control) > maxSockPath {
		return o, fmt.Errorf("lazyfs: control socket path %q longer than %d bytes", o.Control, maxSockPath)
	}
	if o.Log == "" {
		o.Log = backing + ".lazyfs.log"
	}
	if o.Timeout <= 0 {
		o.Timeout = 2 * time.Minute
	}
	return o, nil
}

// local is the filesystem served in this process: only the helper
// process (Serve) holds one; no process using the mount may serve it.
type local struct {
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

// mountLocal serves backing at mountpoint in this process (both absolute;
// o defaulted by Options.withDefaults). Everything backing holds now is
// durable.
func mountLocal(mountpoint, backing string, o Options) (*local, error) {
	if err := Supported(); err != nil {
		return nil, err
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
	f := &local{mountpoint: mountpoint, backing: backing, o: o, s: newState(o.TrashDir, o.Unbuffered)}
	if err := f.s.reset(); err != nil { // a trash left by a killed harness
		return nil, err
	}
	if err := f.mount(); err != nil {
		return nil, err
	}
	return f, nil
}

func (f *local) mount() error {
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
	// kernel's caches never go stale: keep them long.
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
	return nil
}

func (f *local) stats() Stats { return f.s.stats() }

// checkpoint makes everything durable, as sync(2) would.
func (f *local) checkpoint() error { return f.s.reset() }

func (f *local) mounted() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.server != nil
}

// drop is the power loss: the mount goes away (its FUSE
// connection is aborted, so descriptors still open on it, also in other
// mount namespaces, fail with ENOTCONN), the backing directory is put
// back to exactly what was durable, and a fresh mount comes up at the
// same place, with empty kernel caches, as after a reboot. Kill every
// process using the mount first: one that still writes races with the
// revert.
func (f *local) drop() (Dropped, error) {
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

// unmount takes the filesystem down, leaving the backing directory as it
// is (unsynced writes included). Idempotent.
func (f *local) unmount() error {
	if err := f.down(); err != nil && !errors.Is(err, ErrNotMounted) {
		return err
	}
	return f.s.reset()
}

// down aborts the FUSE connection, unmounts and waits for the server.
func (f *local) down() error {
	f.mu.Lock()
	srv := f.server
	f.server = nil
	f.mu.Unlock()
	if srv == nil {
		return ErrNotMounted
	}
	abortErr := abort(f.mountpoint)
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
