package netns

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Errors.
var (
	// ErrUnsupported: not root, or the ip(8) tool is missing.
	ErrUnsupported = errors.New("network namespaces unsupported here")
	// ErrBadName: a namespace name that ip(8) would not accept.
	ErrBadName = errors.New("bad namespace name")
)

// NS is a named network namespace (ip netns).
type NS struct {
	Name string
	fd   int
}

// Supported reports nil if namespaces can be created here, else why not.
func Supported() error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("%w: must run as root", ErrUnsupported)
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return fmt.Errorf("%w: ip(8) not found (apt-get install iproute2)", ErrUnsupported)
	}
	return nil
}

// Create makes namespace name (deleting a leftover of the same name first)
// and brings its loopback up.
func Create(ctx context.Context, name string) (*NS, error) {
	if err := Supported(); err != nil {
		return nil, err
	}
	if name == "" || strings.ContainsAny(name, "/ \t\n") {
		return nil, fmt.Errorf("%w: %q", ErrBadName, name)
	}
	if exists(name) {
		slog.Warn("netns: removing leftover namespace", "name", name)
		if err := remove(ctx, name); err != nil {
			return nil, err
		}
	}
	if err := run(ctx, "ip", "netns", "add", name); err != nil {
		return nil, err
	}
	n := &NS{Name: name, fd: -1}
	if err := run(ctx, "ip", "-n", name, "link", "set", "lo", "up"); err != nil {
		_ = remove(context.WithoutCancel(ctx), name)
		return nil, err
	}
	fd, err := unix.Open(filepath.Join("/run/netns", name), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		_ = remove(context.WithoutCancel(ctx), name)
		return nil, fmt.Errorf("netns %s: open: %w", name, err)
	}
	n.fd = fd
	return n, nil
}

// Close kills every process left in the namespace and deletes it. It is
// safe to call more than once.
func (n *NS) Close() error {
	if n.fd >= 0 {
		unix.Close(n.fd)
		n.fd = -1
	}
	if !exists(n.Name) {
		return nil
	}
	return remove(context.Background(), n.Name)
}

// Command returns cmd prepared to run inside the namespace
// (ip netns exec NAME name args...); ip execs the program, so the
// process's pid is the program's.
func (n *NS) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", n.Name, name}, args...)...)
}

// Run runs a command inside the namespace and returns its combined output.
func (n *NS) Run(ctx context.Context, name string, args ...string) ([]byte, error) {
	out, err := n.Command(ctx, name, args...).CombinedOutput()
	if err != nil {
		return out, fmt.Errorf("netns %s: %s %s: %w: %s", n.Name, name, strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return out, nil
}

// Do runs fn on an OS thread switched into the namespace. Goroutines fn
// starts do NOT run in the namespace. The thread is discarded afterwards.
func (n *NS) Do(fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		// No UnlockOSThread: the goroutine exits locked, so the runtime
		// terminates this thread instead of reusing it in the wrong netns.
		if err := unix.Setns(n.fd, unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("netns %s: setns: %w", n.Name, err)
			return
		}
		errc <- fn()
	}()
	return <-errc
}

// DialContext dials addr from inside the namespace (source chosen by the
// kernel: 127.0.0.1 for loopback destinations).
func (n *NS) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	return n.DialFrom(ctx, "", network, addr)
}

// DialFrom dials addr from inside the namespace with source IP local
// (empty: kernel's choice).
func (n *NS) DialFrom(ctx context.Context, local, network, addr string) (net.Conn, error) {
	var d net.Dialer
	if local != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(local)}
	}
	var c net.Conn
	err := n.Do(func() error {
		var err error
		c, err = d.DialContext(ctx, network, addr)
		return err
	})
	return c, err
}

// Listen listens on addr inside the namespace.
func (n *NS) Listen(network, addr string) (net.Listener, error) {
	var l net.Listener
	err := n.Do(func() error {
		var err error
		l, err = net.Listen(network, addr)
		return err
	})
	return l, err
}

// Pids lists the processes inside the namespace.
func Pids(ctx context.Context, name string) ([]int, error) {
	out, err := exec.CommandContext(ctx, "ip", "netns", "pids", name).Output()
	if err != nil {
		return nil, fmt.Errorf("ip netns pids %s: %w", name, err)
	}
	var pids []int
	for _, f := range strings.Fields(string(out)) {
		if p, err := strconv.Atoi(f); err == nil {
			pids = append(pids, p)
		}
	}
	return pids, nil
}

// List returns the names of all named namespaces.
func List(ctx context.Context) ([]string, error) {
	out, err := exec.CommandContext(ctx, "ip", "netns", "list").Output()
	if err != nil {
		return nil, fmt.Errorf("ip netns list: %w", err)
	}
	var names []string
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			names = append(names, f[0])
		}
	}
	return names, nil
}

// RemoveStale deletes namespaces named prefix<pid> whose pid is no longer
// alive, killing whatever still runs in them. It returns the names removed.
func RemoveStale(ctx context.Context, prefix string) ([]string, error) {
	return removeStale(ctx, prefix, func(rest string) string { return rest })
}

// removeStale deletes the namespaces whose name starts with prefix and
// whose owner pid (pidOf the rest of the name) is no longer alive.
func removeStale(ctx context.Context, prefix string, pidOf func(rest string) string) ([]string, error) {
	names, err := List(ctx)
	if err != nil {
		return nil, err
	}
	var removed []string
	var errs []error
	for _, name := range names {
		rest, ok := strings.CutPrefix(name, prefix)
		if !ok {
			continue
		}
		if pid, err := strconv.Atoi(pidOf(rest)); err == nil && alive(pid) {
			continue
		}
		if err := remove(ctx, name); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, name)
	}
	return removed, errors.Join(errs...)
}

func alive(pid int) bool {
	return syscall.Kill(pid, 0) == nil
}

func exists(name string) bool {
	_, err := os.Stat(filepath.Join("/run/netns", name))
	return err == nil
}

// remove SIGKILLs everything in the namespace, then deletes it.
func remove(ctx context.Context, name string) error {
	if pids, err := Pids(ctx, name); err == nil {
		for _, p := range pids {
			if p != os.Getpid() {
				_ = syscall.Kill(p, syscall.SIGKILL)
			}
		}
	}
	return run(ctx, "ip", "netns", "del", name)
}

func run(ctx context.Context, name string, args ...string) error {
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}
