package e2e

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"phxgo/binlogd/config"
	"phxgo/binlogd/mtls"
	"phxgo/binlogd/mysqld"
	"phxgo/jepsen/sdunit"
	pb "phxgo/proto"
)

// TestClusterFromInit: `binlogd init -hosts 127.0.0.1,127.0.0.2,127.0.0.3`
// (three loopback "hosts" on one machine, the same ports on each) writes
// the node directories; each node is started from its own directory the
// way the systemd units start it (binlogd run -config node<id>/binlogd.json;
// sqlproxy with sqlproxy.env's arguments and the proxy certificate). The
// nodes talk mutual TLS with init's certificates, elect a master, a write
// through a replica's proxy (one hop to the master's) is acknowledged, and
// every node's MariaDB gets it from its own loopback repl_addr.
func TestClusterFromInit(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real cluster")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	base := mysqld.FreePortSpan(6)
	port := func(off int) string { return strconv.Itoa(base + off) }
	root := t.TempDir()
	out := filepath.Join(root, "init")
	initOut, err := exec.Command(filepath.Join(binDir, "binlogd"), "init", "-out", out,
		"-hosts", "127.0.0.1,127.0.0.2,127.0.0.3",
		"-grpc-port", port(0), "-mysql-port", port(1), "-proxy-port", port(2), "-repl-port", port(3), "-proxy-http-port", port(4),
		"-dir", filepath.Join(root, "n{id}", "binlogd"), "-mysql-dir", filepath.Join(root, "n{id}", "mysql"),
		"-install-dir", out, "-lease", "3s").CombinedOutput()
	if err != nil {
		t.Fatalf("binlogd init: %v\n%s", err, initOut)
	}
	t.Logf("binlogd init:\n%s", initOut)

	// Registered before the processes, so it runs after their cleanups:
	// a binlogd that had to be SIGKILLed (a slow handover under load)
	// leaves its MariaDB behind.
	t.Cleanup(func() {
		for id := 1; id <= 3; id++ {
			killByPidFile(filepath.Join(root, fmt.Sprintf("n%d", id), "mysql", "mysqld.pid"))
		}
	})
	var cfgs []*config.Config
	for id := 1; id <= 3; id++ {
		dir := filepath.Join(out, fmt.Sprintf("node%d", id))
		c, err := config.Load(filepath.Join(dir, "binlogd.json"))
		if err != nil {
			t.Fatal(err)
		}
		cfgs = append(cfgs, c)
		startProc(t, dir, "binlogd", "run", "-config", filepath.Join(dir, "binlogd.json"))
		env := readUnitEnv(t, filepath.Join(dir, "sqlproxy.env"))
		// phxgo-sqlproxy@.service's ExecStart, with %i's directory.
		args := []string{"-listen", env["LISTEN"], "-binlogd", env["BINLOGD"], "-admin-user", "phxgo_proxy",
			"-admin-password-file", filepath.Join(dir, "proxy-password"), "-http", env["HTTP"]}
		startProc(t, dir, "sqlproxy", append(args, strings.Fields(env["EXTRA_FLAGS"])...)...)
	}

	admin, err := mtls.Load(mtls.DirFiles(out, mtls.Identity{Role: mtls.RoleAdmin}), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	status := func(c *config.Config) (*pb.NodeStatus, error) {
		cc, err := grpc.NewClient(c.Self().GRPCAddr, grpc.WithTransportCredentials(credentials.NewTLS(admin.Client(""))))
		if err != nil {
			return nil, err
		}
		defer cc.Close()
		sctx, scancel := context.WithTimeout(ctx, 2*time.Second)
		defer scancel()
		return pb.NewAdminClient(cc).Status(sctx, &pb.StatusRequest{})
	}
	start := time.Now()
	var master uint32
	for master == 0 {
		for _, c := range cfgs {
			if st, err := status(c); err == nil && st.Role == pb.Role_ROLE_MASTER && st.Ready {
				master = st.NodeId
			}
		}
		if ctx.Err() != nil {
			t.Fatalf("no master elected from init's configs within the deadline")
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("node %d is master %.1fs after start", master, time.Since(start).Seconds())

	cred, err := cfgs[0].LoadCredentials()
	if err != nil {
		t.Fatal(err)
	}
	open := func(addr, db string) *sql.DB {
		mc := mysql.NewConfig()
		mc.User, mc.Passwd, mc.Net, mc.Addr, mc.DBName = cred.AppUser, cred.AppPassword, "tcp", addr, db
		mc.Timeout, mc.ReadTimeout = 5*time.Second, 30*time.Second
		d, err := sql.Open("mysql", mc.FormatDSN())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.Close() })
		return d
	}
	replica := master%3 + 1
	via := open(cfgs[replica-1].Self().ProxyAddr, "")
	var werr error
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		// The replica's proxy learns the master from its binlogd's poll.
		if _, werr = via.ExecContext(ctx, "CREATE DATABASE IF NOT EXISTS app_init"); werr == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if werr != nil {
		t.Fatalf("write through node %d's proxy: %v", replica, werr)
	}
	mustExec(t, via, "CREATE TABLE app_init.t (id INT PRIMARY KEY, v VARCHAR(20)) ENGINE=InnoDB")
	mustExec(t, via, "INSERT INTO app_init.t VALUES (1, 'from init')")
	for _, c := range cfgs {
		db := open(c.Self().MySQLAddr, "")
		for {
			var v string
			err := db.QueryRowContext(ctx, "SELECT v FROM app_init.t WHERE id = 1").Scan(&v)
			if err == nil && v == "from init" {
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("node %d's MariaDB never got the write: %v", c.ID, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// startProc starts bin/<name> in dir (log in dir/<name>.log) and stops it
// with SIGTERM when the test ends (binlogd then stops its MariaDB safely).
func startProc(t *testing.T, dir, name string, args ...string) {
	t.Helper()
	logf, err := os.Create(filepath.Join(dir, name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(binDir, name), args...)
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); logf.Close(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			b, _ := os.ReadFile(logf.Name())
			if len(b) > 4000 {
				b = b[len(b)-4000:]
			}
			t.Logf("%s (tail):\n%s", logf.Name(), b)
		}
	})
}

// readUnitEnv reads a systemd EnvironmentFile as systemd does (sdunit).
func readUnitEnv(t *testing.T, path string) map[string]string {
	t.Helper()
	env, err := sdunit.ReadEnvFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return env
}

// killByPidFile SIGKILLs the mariadbd a pid file names, if it still runs
// with that file's directory as its datadir (a stale file's pid may have
// been reused by another process).
func killByPidFile(path string) {
	b, err := os.ReadFile(path)
	if err != nil {
		return
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 1 {
		return
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err == nil && strings.Contains(string(cmdline), "mariadbd") && strings.Contains(string(cmdline), filepath.Dir(path)) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}
