package jepsen

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"phxgo/jepsen/checker"
	"phxgo/jepsen/history"
	"phxgo/jepsen/nemesis"
	"phxgo/jepsen/netns"
)

// soloCluster is ONE real mariadbd inside the namespace, standing in for
// the phxgo cluster so the harness (namespace dialing, workloads' SQL,
// recorder, kill/restart heal, checkers) runs end to end against a real
// server. Clients talk to MariaDB directly (ProxyAddr = MySQLAddr).
type soloCluster struct {
	spec LaunchSpec
	node Node
	cnf  string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

func soloLauncher(t *testing.T) Launcher {
	return func(ctx context.Context, spec LaunchSpec) (Cluster, error) {
		host := spec.Hosts[0]
		c := &soloCluster{spec: spec, cnf: filepath.Join(spec.Dir, "my.cnf"),
			node: Node{ID: 1, Host: host, ProxyAddr: host + ":3306", MySQLAddr: host + ":3306", User: "jepsen", Password: "jpw"}}
		cnf := soloCnf(filepath.Join(spec.Dir, "data"), c.socket(), host, filepath.Join(spec.LogDir, "mariadb.err"))
		if err := os.WriteFile(c.cnf, []byte(cnf), 0o644); err != nil {
			return nil, err
		}
		if err := soloDatadir(ctx, filepath.Join(spec.Dir, "data")); err != nil {
			return nil, err
		}
		if err := c.Restart(ctx, 1); err != nil {
			c.Stop()
			return nil, err
		}
		// Bootstrap over the unix socket (not namespaced).
		db, err := sql.Open("mysql", "root@unix("+c.socket()+")/")
		if err != nil {
			c.Stop()
			return nil, err
		}
		defer db.Close()
		for _, s := range []string{
			"CREATE DATABASE IF NOT EXISTS jepsen",
			"CREATE USER IF NOT EXISTS 'jepsen'@'%' IDENTIFIED BY 'jpw'",
			"GRANT ALL ON jepsen.* TO 'jepsen'@'%'",
		} {
			if _, err := db.ExecContext(ctx, s); err != nil {
				c.Stop()
				return nil, fmt.Errorf("%s: %w", s, err)
			}
		}
		return c, nil
	}
}

func soloCnf(datadir, socket, host, errLog string) string {
	return fmt.Sprintf("[mysqld]\ndatadir=%s\nsocket=%s\nport=3306\nbind-address=%s\nuser=root\n"+
		"skip-name-resolve\nskip-log-bin\nperformance_schema=OFF\ninnodb_buffer_pool_size=32M\n"+
		"innodb_log_file_size=48M\ninnodb_flush_log_at_trx_commit=1\nlog-error=%s\n",
		datadir, socket, host, errLog)
}

// soloTemplate is a datadir made by mariadb-install-db once per test
// binary (removed by TestMain); each case starts from a copy. An
// install-db apiece cost make test several seconds of fsyncs per case,
// and its files do not depend on the case (no path or address is in them).
var soloTemplate struct {
	once sync.Once
	dir  string
	err  error
}

// soloDatadir copies the template datadir (made on first use) to dst.
func soloDatadir(ctx context.Context, dst string) error {
	soloTemplate.once.Do(func() {
		dir, err := os.MkdirTemp("", "jepsen-solo-datadir-")
		if err != nil {
			soloTemplate.err = err
			return
		}
		soloTemplate.dir = dir
		cnf := filepath.Join(dir, "my.cnf")
		if err := os.WriteFile(cnf, []byte(soloCnf(filepath.Join(dir, "data"), filepath.Join(dir, "mysqld.sock"),
			"127.0.0.1", filepath.Join(dir, "mariadb.err"))), 0o644); err != nil {
			soloTemplate.err = err
			return
		}
		out, err := exec.CommandContext(ctx, "mariadb-install-db", "--defaults-file="+cnf, "--user=root",
			"--auth-root-authentication-method=socket", "--skip-test-db").CombinedOutput() // root by socket only, as on a phxgo node
		if err != nil {
			soloTemplate.err = fmt.Errorf("install-db: %w: %s", err, out)
		}
	})
	if soloTemplate.err != nil {
		return soloTemplate.err
	}
	if out, err := exec.CommandContext(ctx, "cp", "-a", filepath.Join(soloTemplate.dir, "data"), dst).CombinedOutput(); err != nil {
		return fmt.Errorf("copy the template datadir: %w: %s", err, out)
	}
	return nil
}

func (c *soloCluster) socket() string                         { return filepath.Join(c.spec.Dir, "mysqld.sock") }
func (c *soloCluster) Nodes() []Node                          { return []Node{c.node} }
func (c *soloCluster) Master(context.Context) (uint32, error) { return 1, nil }
func (c *soloCluster) KillBinlogd(uint32) error               { return nil }
func (c *soloCluster) KillNode(id uint32) error               { return c.KillMysqld(id) }
func (c *soloCluster) Stop() error                            { return c.KillMysqld(1) }

func (c *soloCluster) pid() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cmd == nil {
		return 0
	}
	return c.cmd.Process.Pid
}

func (c *soloCluster) Pids(uint32) (int, int, int) { return c.pid(), 0, 0 }

func (c *soloCluster) KillMysqld(uint32) error {
	c.mu.Lock()
	cmd, done := c.cmd, c.done
	c.mu.Unlock()
	if cmd == nil {
		return nil
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-done
	return nil
}

func (c *soloCluster) Pause(uint32, bool) error {
	if p := c.pid(); p != 0 {
		return syscall.Kill(p, syscall.SIGSTOP)
	}
	return nil
}

func (c *soloCluster) Resume(uint32) error {
	if p := c.pid(); p != 0 {
		return syscall.Kill(p, syscall.SIGCONT)
	}
	return nil
}

func (c *soloCluster) Restart(ctx context.Context, _ uint32) error {
	c.mu.Lock()
	if c.cmd == nil {
		cmd := c.spec.Command(context.WithoutCancel(ctx), "mariadbd", "--defaults-file="+c.cnf)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			c.mu.Unlock()
			return err
		}
		done := make(chan struct{})
		c.cmd, c.done = cmd, done
		go func() {
			_ = cmd.Wait()
			c.mu.Lock()
			c.cmd = nil
			c.mu.Unlock()
			close(done)
		}()
	}
	c.mu.Unlock()
	return c.WaitHealthy(ctx)
}

// WaitHealthy pings over TCP from inside the namespace (as clients do).
func (c *soloCluster) WaitHealthy(ctx context.Context) error {
	cfg := mysql.NewConfig()
	cfg.User, cfg.Passwd, cfg.Net, cfg.Addr = "root", "", "phxjepsen-solo", c.node.MySQLAddr
	mysql.RegisterDialContext("phxjepsen-solo", func(ctx context.Context, addr string) (net.Conn, error) {
		return c.spec.Dial(ctx, "tcp", addr)
	})
	cfg.Timeout = time.Second
	for {
		db, err := sql.Open("mysql", cfg.FormatDSN())
		if err == nil {
			err = db.PingContext(ctx)
			db.Close()
		}
		var me *mysql.MySQLError
		if err == nil || errors.As(err, &me) { // an auth error means it is up
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: %w", ctx.Err(), err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func TestRunEndToEndSoloMariaDB(t *testing.T) {
	if err := netns.Supported(); err != nil {
		t.Skipf("skipping: %v", err)
	}
	if _, err := exec.LookPath("mariadb-install-db"); err != nil {
		if testing.Short() {
			t.Skip("MariaDB not installed; skipped in -short")
		}
		t.Fatal("MariaDB not installed (scripts/install-deps.sh)")
	}
	cases := []struct{ workload, nemesis string }{
		{"register", "kill"},
		{"bank", "pause"},
		{"set", "kill"},
		{"append", "partition"}, // one node: no links to cut, exercises iptables only
	}
	for _, tc := range cases {
		t.Run(tc.workload+"-"+tc.nemesis, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Workload, cfg.Nemesis, cfg.Nodes = tc.workload, tc.nemesis, 1
			cfg.Time, cfg.Concurrency, cfg.Rate, cfg.Seed = 6*time.Second, 4, 200, 7
			cfg.Lease, cfg.OpTimeout = 500*time.Millisecond, 3*time.Second
			cfg.BinDir, cfg.OutDir = t.TempDir(), t.TempDir()
			if d := os.Getenv("JEPSEN_TEST_OUT"); d != "" {
				cfg.OutDir = filepath.Join(d, tc.workload+"-"+tc.nemesis)
			}
			cfg.Schedule = &nemesis.Schedule{Quiet: time.Second, HoldMin: time.Second, HoldMax: time.Second, HealTO: time.Minute}
			res, err := Run(context.Background(), cfg, soloLauncher(t))
			if err != nil {
				t.Fatal(err)
			}
			t.Log(res.Line())
			if res.Valid != checker.Valid {
				t.Fatalf("%s; checks: %+v", res.Line(), res.Checks)
			}
			if res.OK == 0 || res.Faults == 0 {
				t.Fatalf("no ok ops or no faults: %s faults=%d", res.Line(), res.Faults)
			}
			h, err := history.ReadFile(filepath.Join(cfg.OutDir, "history.jsonl"))
			if err != nil || len(h) != res.Ops+res.Faults {
				t.Fatalf("history.jsonl: %d ops, %v; want %d", len(h), err, res.Ops+res.Faults)
			}
			if _, err := os.Stat(filepath.Join(cfg.OutDir, "results.json")); err != nil {
				t.Fatal(err)
			}
			names, _ := netns.List(context.Background())
			for _, n := range names {
				if n == fmt.Sprintf("%s%d", NSPrefix, os.Getpid()) {
					t.Fatalf("namespace %s left behind", n)
				}
			}
		})
	}
}
