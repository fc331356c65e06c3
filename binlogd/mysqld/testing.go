package mysqld

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// FreePort returns a TCP port free on loopback, for a server a test
// starts (and may restart) itself.
func FreePort(t testing.TB) int {
	t.Helper()
	return FreePortSpan(1)
}

// FreePortSpan returns a port p with p..p+n-1 free on loopback, taken
// below the kernel's ephemeral range: a port from that range (what
// Listen(":0") hands out) can be taken by any outgoing connection between
// the check and the server's bind, or while a killed server restarts.
//
// PHXGO_TEST_PORTS=LO-HI (e.g. 37050-37099) confines the choice to that
// range, for a host whose other ports belong to someone else.
func FreePortSpan(n int) int {
	lo, hi := 10000, ephemeralLow()-n
	if r := os.Getenv("PHXGO_TEST_PORTS"); r != "" {
		a, b, _ := strings.Cut(r, "-")
		l, err1 := strconv.Atoi(a)
		h, err2 := strconv.Atoi(b)
		if err1 != nil || err2 != nil || h-n+1 < l {
			panic(fmt.Sprintf("PHXGO_TEST_PORTS=%s: want LO-HI holding at least %d ports", r, n))
		}
		lo, hi = l, h-n+2
	}
	for try := 0; ; try++ {
		p := lo + rand.Intn(max(hi-lo, 1))
		if try > 1000 || PortsFree(p, n) {
			return p
		}
	}
}

// PortsFree reports whether p..p+n-1 can be bound on loopback now.
func PortsFree(p, n int) bool {
	for i := range n {
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p+i)))
		if err != nil {
			return false
		}
		l.Close()
	}
	return true
}

// ephemeralLow is the first port of the kernel's ephemeral range.
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if lo, err := strconv.Atoi(f[0]); err == nil && lo > 12000 {
				return lo
			}
		}
	}
	return 32768
}

// NewTestInstance initializes and starts a MariaDB in t.TempDir() and
// kills it when the test ends. A machine without MariaDB fails the test
// (CI installs it) unless -short is given, which skips.
func NewTestInstance(t testing.TB, serverID uint32, extra ...string) *Instance {
	t.Helper()
	return NewTestInstanceOpts(t, Options{ServerID: serverID, Extra: extra})
}

// NewTestInstanceOpts is NewTestInstance with opts (e.g. TLS); Dir and
// Port are the test's own.
func NewTestInstanceOpts(t testing.TB, opts Options) *Instance {
	t.Helper()
	if _, err := exec.LookPath("mariadb-install-db"); err != nil {
		if testing.Short() {
			t.Skip("MariaDB not installed; skipped in -short")
		}
		t.Fatal(ErrNotInstalled)
	}
	opts.Dir, opts.Port = t.TempDir(), FreePort(t)
	inst, err := New(opts)
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

// NewTestServer is NewTestInstance bootstrapped with binlogd's accounts
// (DefaultAccounts), as a node's MariaDB has them, and its root handle,
// closed when the test ends.
func NewTestServer(t testing.TB, serverID uint32, extra ...string) (*Instance, *sql.DB) {
	t.Helper()
	inst := NewTestInstance(t, serverID, extra...)
	db := inst.TestDB(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := Bootstrap(ctx, db, DefaultAccounts()); err != nil {
		t.Fatal(err)
	}
	return inst, db
}

// TestDB is a root handle on the instance for test t, closed when the
// test ends.
func (i *Instance) TestDB(t testing.TB) *sql.DB {
	t.Helper()
	db, err := i.DB("")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}
