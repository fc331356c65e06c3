package preflight

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
)

func listen(t *testing.T) (net.Listener, string) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l, l.Addr().String()
}

// freeAddr is a loopback address nobody listens on (just closed), and
// one no earlier freeAddr call of this process handed out: the kernel
// may give a just-closed port again, and a config with two keys on one
// port fails validation for the wrong reason (CI: repl_addr clashed with
// grpc_listen).
func freeAddr(t *testing.T) string {
	handedOutMu.Lock()
	defer handedOutMu.Unlock()
	for {
		l, a := listen(t)
		l.Close()
		if !handedOut[a] {
			handedOut[a] = true
			return a
		}
	}
}

var (
	handedOutMu sync.Mutex
	handedOut   = map[string]bool{}
)

func TestCheckPorts(t *testing.T) {
	ctx := context.Background()
	me := fmt.Sprintf("pid %d", os.Getpid())
	for _, c := range []struct {
		name string
		// busy: which endpoint the test holds; lockDir: hold this
		// node's wal lock as a running binlogd does.
		busy     string
		lockDir  bool
		mysqlPid bool
		want     Status
		finding  string
		fix      string
	}{
		{name: "all free", want: OK, finding: "is free"},
		{name: "grpc held by a stranger", busy: "grpc", want: Fail, finding: "in use by " + me, fix: "set members[0].grpc_addr in "},
		{name: "repl held by a stranger", busy: "repl", want: Fail, finding: "in use by " + me, fix: "set repl_addr in "},
		{name: "grpc held by this node's running binlogd", busy: "grpc", lockDir: true, want: Warn, finding: "this node's binlogd (" + me, fix: "kill -TERM"},
		{name: "mysql held by this node's MariaDB", busy: "mysql", mysqlPid: true, want: Warn, finding: "this node's MariaDB", fix: "binlogd stop-mysql -config"},
		{name: "mysql held, pid file of no mariadbd", busy: "mysql", want: Fail, finding: "in use by " + me, fix: "kill "},
	} {
		t.Run(c.name, func(t *testing.T) {
			env := testEnv(t)
			env.Root = "" // the real /proc: the listener is this test's
			cfg := testConfig(t)
			cfg.Members[0].GRPCAddr, cfg.Members[0].MySQLAddr, cfg.ReplAddr = freeAddr(t), freeAddr(t), freeAddr(t)
			busy := map[string]*string{"grpc": &cfg.Members[0].GRPCAddr, "mysql": &cfg.Members[0].MySQLAddr, "repl": &cfg.ReplAddr}
			if p := busy[c.busy]; p != nil {
				_, *p = listen(t)
			}
			if c.lockDir {
				holdWALLock(t, cfg.Dir)
			}
			if c.mysqlPid {
				// comm of this test process is not mariadbd: point the
				// check at a fake /proc whose comm says so.
				env.Root = fakeProc(t, os.Getpid(), "mariadbd")
				writeFile(t, filepath.Join(cfg.MySQLDir, "mysqld.pid"), strconv.Itoa(os.Getpid())+"\n", 0o644)
			}
			env.Config = cfg
			rs := CheckPorts(ctx, env)
			if c.busy == "" {
				if Worst(rs) != OK || len(rs) != 3 {
					t.Fatalf("want 3 ok, got %+v", rs)
				}
				return
			}
			want1(t, only(rs, "port "+map[string]string{"grpc": "members[0].grpc_addr", "mysql": "members[0].mysql_addr", "repl": "repl_addr"}[c.busy]),
				c.want, c.finding, c.fix)
		})
	}
}

func TestCheckPortNotLocal(t *testing.T) {
	env := testEnv(t)
	cfg := testConfig(t)
	cfg.Members[0].GRPCAddr = "192.0.2.1:17011" // TEST-NET-1: never this host's
	cfg.GRPCListen = ""
	cfg.Members[0].MySQLAddr, cfg.ReplAddr = freeAddr(t), freeAddr(t)
	env.Config = cfg
	want1(t, only(CheckPorts(context.Background(), env), "port members[0].grpc_addr"), Fail,
		"192.0.2.1:17011 is not an address of this host", "set members[0].grpc_addr")
	cfg.GRPCListen = freeAddr(t)
	want1(t, only(CheckPorts(context.Background(), env), "port grpc_listen"), OK, "is free", "")
}

// holdWALLock takes dir/paxos/wal.lock as an open wal does.
func holdWALLock(t *testing.T, dir string) {
	t.Helper()
	p := filepath.Join(dir, "paxos", "wal.lock")
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
}

// fakeProc is a Root whose /proc has what the real one has for the
// port lookup (net, locks, this process's fds) and comm of pid says comm.
func fakeProc(t *testing.T, pid int, comm string) string {
	t.Helper()
	root := t.TempDir()
	for _, f := range []string{"net", "locks"} {
		if err := os.Symlink("/proc/"+f, filepath.Join(root, "proc-"+f)); err != nil {
			t.Fatal(err)
		}
	}
	pd := filepath.Join(root, "proc", strconv.Itoa(pid))
	writeFile(t, filepath.Join(pd, "comm"), comm+"\n", 0o644)
	for _, f := range []string{"net", "locks"} {
		if err := os.Rename(filepath.Join(root, "proc-"+f), filepath.Join(root, "proc", f)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(fmt.Sprintf("/proc/%d/fd", pid), filepath.Join(pd, "fd")); err != nil {
		t.Fatal(err)
	}
	return root
}

var netListen = func(addr string) (net.Listener, error) { return net.Listen("tcp", addr) }
