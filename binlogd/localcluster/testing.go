package localcluster

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"phxgo/binlogd/mysqld"
)

// BuildBinaries builds binlogd and sqlproxy into dir (for tests).
func BuildBinaries(dir string) error {
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	cmd := exec.Command("go", "build", "-o", dir+"/", "./cmd/binlogd", "./cmd/sqlproxy")
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("go build: %w\n%s", err, out)
	}
	return nil
}

func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("go.mod not found above %s", dir)
		}
		dir = parent
	}
}

// FreeBasePort finds a base port whose node port ranges are free on
// loopback, below the kernel's ephemeral range (mysqld.FreePortSpan).
func FreeBasePort(nodes int) int {
	span := 10*nodes + offProxyRW + 1
	for {
		base := mysqld.FreePortSpan(span+10) / 10 * 10
		if mysqld.PortsFree(base+10, span) {
			return base
		}
	}
}

// StartForTest starts a cluster in t.TempDir() with binaries from binDir
// (the ports of one more node are free too, for AddNode),
// waits until it is healthy, and stops it when the test ends (leaving the
// logs in the temp dir, printed on failure).
func StartForTest(t testing.TB, binDir string, nodes int, lease time.Duration, proxy bool) (*Cluster, uint32) {
	t.Helper()
	return StartSpecForTest(t, Spec{BinDir: binDir, Nodes: nodes, LeaseDuration: lease, Proxy: proxy})
}

// StartSpecForTest is StartForTest for a spec the test fills in (Dir
// and BasePort are set when empty).
func StartSpecForTest(t testing.TB, spec Spec) (*Cluster, uint32) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a real cluster; skipped in -short")
	}
	if spec.Dir == "" {
		spec.Dir = t.TempDir()
		if keep := os.Getenv("PHXGO_KEEP_CLUSTER"); keep != "" {
			// Debugging: keep the cluster's files after the test.
			spec.Dir, _ = os.MkdirTemp(keep, "cluster-")
			t.Logf("cluster files kept in %s", spec.Dir)
		}
	}
	if spec.BasePort == 0 {
		spec.BasePort = FreeBasePort(spec.Nodes + 1) // room for a node a test adds
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	c, err := Start(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			c.DumpLogs(t)
		}
		_ = c.Stop()
	})
	master, err := c.WaitHealthy(ctx, func(s string) { t.Log("waiting:", s) })
	if err != nil {
		t.Fatal(err)
	}
	return c, master
}

// DumpLogs prints the tail of every node's logs to the test log.
func (c *Cluster) DumpLogs(t testing.TB) {
	for id := 1; id <= c.Spec.Nodes; id++ {
		for _, f := range []string{"binlogd.log", "sqlproxy.log", "mysql/error.log"} {
			b, err := os.ReadFile(filepath.Join(c.Spec.NodeDir(id), f))
			if err != nil {
				continue
			}
			if len(b) > 6000 {
				b = b[len(b)-6000:]
			}
			t.Logf("==== node %d %s ====\n%s", id, f, b)
		}
	}
}

// AppDB opens a connection pool as the application account to addr (a
// node's MariaDB or sqlproxy).
func (c *Cluster) AppDB(addr string) (*sql.DB, error) {
	cr, err := loadCred(c.Spec.Dir)
	if err != nil {
		return nil, err
	}
	cfg := mysql.NewConfig()
	cfg.User, cfg.Passwd, cfg.Net, cfg.Addr = cr.AppUser, cr.AppPassword, "tcp", addr
	cfg.Timeout = 5 * time.Second
	cfg.InterpolateParams = true
	return sql.Open("mysql", cfg.FormatDSN())
}

// RootDB opens node id's MariaDB admin account over its unix socket
// (mysqld.AdminUser, authenticated by the socket peer's OS user; the
// only way in as an administrator).
func (c *Cluster) RootDB(id uint32) (*sql.DB, error) {
	cfg := mysql.NewConfig()
	cfg.User, cfg.Net, cfg.Addr = mysqld.AdminUser(), "unix", filepath.Join(c.Spec.NodeDir(int(id)), "mysql", "mysqld.sock")
	cfg.Timeout = 5 * time.Second
	return sql.Open("mysql", cfg.FormatDSN())
}

// MySQLAddr is node id's MariaDB address.
func (c *Cluster) MySQLAddr(id uint32) string { return c.Spec.addr(int(id), offMySQL) }

// HTTPAddr is node id's binlogd metrics address.
func (c *Cluster) HTTPAddr(id uint32) string { return c.Spec.addr(int(id), offHTTP) }

// ProxyAddr is node id's sqlproxy (linearizable) address.
func (c *Cluster) ProxyAddr(id uint32) string { return c.Spec.addr(int(id), offProxy) }

// RWSplitAddr is node id's sqlproxy read/write-split address.
func (c *Cluster) RWSplitAddr(id uint32) string { return c.Spec.addr(int(id), offProxyRW) }

// ProxyHTTPAddr is node id's sqlproxy admin HTTP address (/backends,
// /metrics).
func (c *Cluster) ProxyHTTPAddr(id uint32) string { return c.Spec.addr(int(id), offProxyHTTP) }
