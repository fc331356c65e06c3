package lazyfs

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// within fails the test if fn has not returned after d: what these tests
// guard against is a hang, not slowness.
func within(t *testing.T, d time.Duration, what string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); fn() }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s still waiting after %v", what, d)
	}
}

// TestServerKilledIsCleanedUp: a server that dies takes its mount with
// it; the next request reports ErrServerLost (it does not hang) and
// leaves nothing mounted.
func TestServerKilledIsCleanedUp(t *testing.T) {
	f := mountT(t, Options{})
	durable(t, f, "a", "durable")
	if err := syscall.Kill(f.ServerPid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-f.exited
	var err error
	within(t, time.Minute, "drop with a dead server", func() { _, err = f.DropUnsynced() })
	if !errors.Is(err, ErrServerLost) {
		t.Fatalf("drop with a dead server: %v, want ErrServerLost", err)
	}
	if mounted(f.Mountpoint()) {
		t.Fatal("still mounted")
	}
	if _, err := f.Stats(); !errors.Is(err, ErrNotMounted) {
		t.Fatalf("stats after the server was lost: %v", err)
	}
	want(t, filepath.Join(f.Backing(), "a"), "durable")
}

// TestServerHungIsCleanedUp: a server that stops answering (SIGSTOP) is
// given Options.Timeout; then its connection is aborted, so a process
// blocked on the mount gets an error, and the server is killed.
func TestServerHungIsCleanedUp(t *testing.T) {
	f := mountT(t, Options{Timeout: 3 * time.Second})
	durable(t, f, "a", "durable")
	if err := syscall.Kill(f.ServerPid(), syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	// A reader in another process (cat), so this one never waits on the
	// mount itself: it blocks until the connection is aborted.
	reader := exec.Command("cat", f.p("a"))
	if err := reader.Start(); err != nil {
		t.Fatal(err)
	}
	readerDone := make(chan error, 1)
	go func() { readerDone <- reader.Wait() }()
	var err error
	within(t, time.Minute, "stats with a hung server", func() { _, err = f.Stats() })
	if !errors.Is(err, ErrServerLost) {
		t.Fatalf("stats with a hung server: %v, want ErrServerLost", err)
	}
	select {
	case <-readerDone: // an error or the cached content; it did not hang
	case <-time.After(time.Minute):
		_ = reader.Process.Kill()
		t.Fatal("a reader of the mount still waits after the server was lost")
	}
	select {
	case <-f.exited:
	default:
		t.Fatal("the hung server was not killed")
	}
	if mounted(f.Mountpoint()) {
		t.Fatal("still mounted")
	}
}

// TestServerStopsWhenItsStarterDies: the server's stdin is its lifeline;
// when the process that started it is gone (here: its end is closed),
// it unmounts and exits, so a killed test binary leaves no mount behind.
func TestServerStopsWhenItsStarterDies(t *testing.T) {
	if err := Supported(); err != nil {
		t.Skipf("skipping: %v", err)
	}
	dir := t.TempDir()
	mnt, back := filepath.Join(dir, "mnt"), filepath.Join(dir, "back")
	for _, d := range []string{mnt, back} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	srv := exec.Command(os.Args[0], "lazyfs-serve", "-mount", mnt, "-backing", back,
		"-control", filepath.Join(dir, "c.sock"), "-lifeline")
	stdin, err := srv.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := srv.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = srv.Process.Kill()
		_ = forceUnmount(mnt)
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if strings.TrimSpace(line) != readyLine {
		t.Fatalf("server said %q (%v)", line, err)
	}
	if !mounted(mnt) {
		t.Fatal("not mounted once ready")
	}
	stdin.Close()
	within(t, time.Minute, "server after its stdin closed", func() { err = srv.Wait() })
	if err != nil {
		t.Fatalf("server exit: %v", err)
	}
	if mounted(mnt) {
		t.Fatal("still mounted after the server exited")
	}
}

// TestMountinfoEscapes: mount points with spaces are found.
func TestMountinfoEscapes(t *testing.T) {
	if got := unescapeMount(`/tmp/a\040b\134c`); got != `/tmp/a b\c` {
		t.Fatalf("got %q", got)
	}
}
