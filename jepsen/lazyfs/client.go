package lazyfs

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// FS is one lazy filesystem, served by a helper process of its own
// (ServeMain) and driven over its control socket: the process that mounts
// it, and starts the processes using it, never serves it. (Served in the
// harness, a stop-the-world GC waited for a thread blocked in a FUSE
// request only that process could answer.) Its methods are safe for
// concurrent use, but DropUnsynced must not race with processes using the
// mount.
type FS struct {
	mountpoint, backing string
	o                   Options
	tmp                 string // a directory Mount made for the control socket

	cmd      *exec.Cmd
	lifeline *os.File      // stdin of the server: closing it (or dying) stops it
	exited   chan struct{} // closed once the server is reaped
	waitErr  error         // the server's exit, set before exited closes

	mu   sync.Mutex // one request at a time
	gone bool       // unmounted, cleanly or by force
}

// Mount starts a server for backing at mountpoint (both directories
// must exist; the mountpoint is hidden while mounted) and waits until it
// serves. Everything backing holds now is durable. If the process calling
// Mount dies, the server unmounts and exits on its own.
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
	for _, d := range []string{mountpoint, backing} {
		if st, err := os.Stat(d); err != nil {
			return nil, fmt.Errorf("lazyfs: %w", err)
		} else if !st.IsDir() {
			return nil, fmt.Errorf("lazyfs: %s is not a directory", d)
		}
	}
	if mounted(mountpoint) {
		return nil, fmt.Errorf("lazyfs: a FUSE filesystem is mounted at %s already", mountpoint)
	}
	if o, err = o.withDefaults(backing); err != nil {
		return nil, err
	}
	f := &FS{mountpoint: mountpoint, backing: backing, o: o, exited: make(chan struct{})}
	if f.o.Control == "" {
		if f.tmp, err = os.MkdirTemp("", "lazyfs-"); err != nil {
			return nil, err
		}
		f.o.Control = filepath.Join(f.tmp, "control.sock")
	}
	if err := f.start(); err != nil {
		f.removeTemp()
		return nil, err
	}
	return f, nil
}

// start runs the server and waits for its ready line.
func (f *FS) start() error {
	logf, err := os.OpenFile(f.o.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("lazyfs: server log: %w", err)
	}
	defer logf.Close() // the server has its own descriptor
	stdinR, stdinW, err := os.Pipe()
	if err != nil {
		return err
	}
	defer stdinR.Close()
	outR, outW, err := os.Pipe()
	if err != nil {
		stdinW.Close()
		return err
	}
	defer outR.Close()
	args := append(append([]string(nil), f.o.Server[1:]...),
		"-mount", f.mountpoint, "-backing", f.backing, "-control", f.o.Control,
		"-trash", f.o.TrashDir, "-lifeline")
	if len(f.o.Unbuffered) > 0 {
		args = append(args, "-unbuffered", strings.Join(f.o.Unbuffered, ","))
	}
	if f.o.FsyncPersistsName {
		args = append(args, "-fsync-persists-name")
	}
	cmd := exec.Command(f.o.Server[0], args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdinR, outW, logf
	// Its own process group: a Ctrl-C meant for the harness must not
	// take the disks away before the harness has stopped using them.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = cmd.Start()
	outW.Close()
	if err != nil {
		stdinW.Close()
		return fmt.Errorf("lazyfs: start server %s: %w", f.o.Server[0], err)
	}
	f.cmd, f.lifeline = cmd, stdinW
	go func() {
		f.waitErr = cmd.Wait()
		close(f.exited)
	}()
	_ = outR.SetReadDeadline(time.Now().Add(min(f.o.Timeout, time.Minute)))
	line, rerr := bufio.NewReader(outR).ReadString('\n')
	if strings.TrimSpace(line) == readyLine {
		slog.Info("lazyfs: mounted", "mount", f.mountpoint, "server_pid", cmd.Process.Pid, "control", f.o.Control)
		return nil
	}
	// It exited (EOF) or is stuck: make sure it is gone and nothing is left mounted.
	lerr := f.lose()
	exit := f.exitErr()
	err = fmt.Errorf("lazyfs: server for %s did not start (%v; exit: %v): %s", f.mountpoint, rerr, exit, f.logTail())
	if ee, ok := exit.(*exec.ExitError); ok && ee.ExitCode() == exitUnsupported {
		err = fmt.Errorf("%w: %w", ErrUnsupported, err)
	}
	return errors.Join(err, lerr)
}

// logTail is the end of the server's log, for errors.
func (f *FS) logTail() string {
	b, err := os.ReadFile(f.o.Log)
	if err != nil {
		return err.Error()
	}
	const n = 1000
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return strings.TrimSpace(string(b))
}

// Mountpoint is where the filesystem is mounted.
func (f *FS) Mountpoint() string { return f.mountpoint }

// Backing is the directory holding the files.
func (f *FS) Backing() string { return f.backing }

// ServerPid is the helper process serving the mount.
func (f *FS) ServerPid() int { return f.cmd.Process.Pid }

// Stats tells what a drop now would undo.
func (f *FS) Stats() (Stats, error) {
	r, err := f.call(opStatus)
	return r.Stats, err
}

// Checkpoint makes everything durable, as sync(2) would.
func (f *FS) Checkpoint() error {
	_, err := f.call(opCheckpoint)
	return err
}

// DropUnsynced is the power loss: the mount goes away (its FUSE
// connection is aborted, so descriptors still open on it, also in other
// mount namespaces, fail with ENOTCONN), the backing directory is put
// back to exactly what was durable, and a fresh mount comes up at the
// same place, with empty kernel caches, as after a reboot. Kill every
// process using the mount first: one that still writes races with the
// revert.
func (f *FS) DropUnsynced() (Dropped, error) {
	r, err := f.call(opDrop)
	if r.Dropped == nil {
		return Dropped{}, err
	}
	return *r.Dropped, err
}

// call sends one request. A server that is gone or does not answer in
// Options.Timeout is killed and its mount taken down (ErrServerLost).
func (f *FS) call(op string) (response, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.gone {
		return response{}, ErrNotMounted
	}
	r, err := f.roundTrip(op)
	if err != nil {
		lerr := f.lose()
		return r, errors.Join(fmt.Errorf("%w: %s of %s: %w (server log %s)", ErrServerLost, op, f.mountpoint, err, f.o.Log), lerr)
	}
	if r.Error != "" {
		err = errors.New(r.Error)
		if r.NotMounted {
			err = fmt.Errorf("%w: %s", ErrNotMounted, r.Error)
		}
	}
	return r, err
}

func (f *FS) roundTrip(op string) (response, error) {
	var r response
	select {
	case <-f.exited:
		return r, fmt.Errorf("server exited: %v", f.exitErr())
	default:
	}
	deadline := time.Now().Add(f.o.Timeout)
	c, err := net.DialTimeout("unix", f.o.Control, f.o.Timeout)
	if err != nil {
		return r, err
	}
	defer c.Close()
	_ = c.SetDeadline(deadline)
	b, _ := json.Marshal(request{Op: op})
	if _, err := c.Write(append(b, '\n')); err != nil {
		return r, err
	}
	line, err := bufio.NewReader(c).ReadBytes('\n')
	if err != nil {
		return r, fmt.Errorf("no answer: %w", err)
	}
	return r, json.Unmarshal(line, &r)
}

// Unmount takes the filesystem down, leaving the backing directory as it
// is (unsynced writes included), and waits for the server to exit; a
// server that does not is killed and the mount taken down by force.
// Idempotent.
func (f *FS) Unmount() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.gone {
		return nil
	}
	r, err := f.roundTrip(opUnmount)
	if err == nil && r.Error != "" {
		err = errors.New(r.Error)
	}
	if err == nil {
		select {
		case <-f.exited:
		case <-time.After(f.o.Timeout):
			err = errors.New("server did not exit after unmount")
		}
	}
	if err != nil {
		return errors.Join(fmt.Errorf("lazyfs: unmount %s: %w (server log %s)", f.mountpoint, err, f.o.Log), f.lose())
	}
	f.finish()
	if mounted(f.mountpoint) {
		return fmt.Errorf("lazyfs: %s still mounted after its server exited", f.mountpoint)
	}
	return nil
}

// lose takes down a server that failed: the connection is aborted (every
// request waiting on the mount fails at once), the server's process group
// is SIGKILLed and reaped, and the mount detached. Caller holds mu (or
// owns f alone).
func (f *FS) lose() error {
	_ = abort(f.mountpoint)
	var errs []error
	select {
	case <-f.exited:
	default:
		_ = syscall.Kill(-f.cmd.Process.Pid, syscall.SIGKILL)
		select {
		case <-f.exited:
		case <-time.After(30 * time.Second):
			errs = append(errs, fmt.Errorf("lazyfs: server %d not reaped 30 s after SIGKILL", f.cmd.Process.Pid))
		}
	}
	errs = append(errs, forceUnmount(f.mountpoint))
	slog.Warn("lazyfs: server lost; mount taken down", "mount", f.mountpoint, "server_pid", f.cmd.Process.Pid,
		"exit", f.exitErr())
	f.finish()
	return errors.Join(errs...)
}

// finish releases what the client holds once the server is gone.
func (f *FS) finish() {
	f.gone = true
	f.lifeline.Close()
	_ = os.Remove(f.o.Control)
	f.removeTemp()
}

func (f *FS) removeTemp() {
	if f.tmp != "" {
		os.RemoveAll(f.tmp)
	}
}

// exitErr is the server's exit, or nil while it runs.
func (f *FS) exitErr() error {
	select {
	case <-f.exited:
		return f.waitErr
	default:
		return nil
	}
}
