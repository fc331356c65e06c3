package mysqld

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"testing"
	"time"
)

// FreePort asks the kernel for a free TCP port on loopback.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// NewTestInstance initializes and starts a MariaDB in t.TempDir() and
// kills it when the test ends. A machine without MariaDB fails the test
// (CI installs it) unless -short is given, which skips.
func NewTestInstance(t testing.TB, serverID uint32, extra ...string) *Instance {
	t.Helper()
	if _, err := exec.LookPath("mariadb-install-db"); err != nil {
		if testing.Short() {
			t.Skip("MariaDB not installed; skipped in -short")
		}
		t.Fatal(ErrNotInstalled)
	}
	inst, err := New(Options{Dir: t.TempDir(), Port: FreePort(t), ServerID: serverID, Extra: extra})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := inst.Init(ctx); err != nil {
		t.Fatal(err)
	}
	if err := inst.Start(ctx); err != nil {
		t.Fatal(fmt.Errorf("start: %w", err))
	}
	t.Cleanup(func() { _ = inst.Kill() })
	return inst
}
