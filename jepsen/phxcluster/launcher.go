package phxcluster

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/go-sql-driver/mysql"

	"phxgo/binlogd/config"
	"phxgo/binlogd/localcluster"
	"phxgo/jepsen/cluster"
	"phxgo/jepsen/lazyfs"
)

// Errors.
var (
	// ErrNoMaster: no node claims to be the ready master right now.
	ErrNoMaster = errors.New("phxcluster: no ready master")
	// ErrNotRunning: a process Restart started did not come up.
	ErrNotRunning = errors.New("phxcluster: process not running")
	// ErrNoMariaDB: a MariaDB fault asked of a witness, which runs none.
	ErrNoMariaDB = errors.New("phxcluster: a witness runs no MariaDB")
)

// Options tune the launcher; the zero value is valid.
type Options struct {
	// BasePort of node 1's port range (node N uses BasePort+10N..+6).
	// The namespace has its own port space, so a fixed default is safe.
	BasePort int
	// MySQLExtra are extra my.cnf lines for every node.
	MySQLExtra []string
	// LazyFS puts each node's directory (binlogd's, MariaDB's datadir)
	// on its own jepsen/lazyfs mount, so PowerCut (the power nemesis) can
	// drop what was not fsynced. Needs root and /dev/fuse.
	LazyFS bool
	// LazyFSStrictNames: a new file's name is durable only after an fsync
	// of its directory (POSIX, Jepsen's LazyFS). Default: fsync of the
	// file makes its name durable too (lazyfs.Options.FsyncPersistsName,
	// what ext4 and XFS do), because MariaDB 10.11 never fsyncs its
	// datadir after CREATE TABLE: strict, a power loss right after one
	// leaves InnoDB unable to start (the redo log names a .ibd that is
	// gone).
	LazyFSStrictNames bool
	// LazyFSServer is the command serving each node's lazyfs in a helper
	// process of its own (lazyfs.Options.Server); default: this
	// executable's "lazyfs-serve" (cmd/jepsen has it, and so has the
	// jepsen package's test binary).
	LazyFSServer []string
}

// Database is the schema the workloads use; WaitHealthy creates it.
const Database = "jepsen"

// Launcher returns a cluster.Launcher that starts a phxgo cluster with
// localcluster inside the harness's namespace.
func Launcher(o Options) cluster.Launcher {
	if o.BasePort == 0 {
		o.BasePort = 17000
	}
	return func(ctx context.Context, spec cluster.LaunchSpec) (cluster.Cluster, error) {
		return launch(ctx, o, spec)
	}
}

func launch(ctx context.Context, o Options, spec cluster.LaunchSpec) (*Cluster, error) {
	if spec.Dial == nil {
		return nil, errors.New("phxcluster: LaunchSpec.Dial is required")
	}
	ls := localcluster.Spec{
		Dir: spec.Dir, Nodes: spec.Nodes, Witnesses: spec.Witnesses, Learners: spec.Learners, Hosts: spec.Hosts, BasePort: o.BasePort,
		BinDir: spec.BinDir, NetNS: spec.NetNS, LeaseDuration: spec.LeaseDuration,
		Proxy: true, MySQLExtra: o.MySQLExtra,
	}
	c := &Cluster{spec: spec, paused: map[uint32][]int{}}
	if o.LazyFS {
		disks, err := mountDisks(ls, o)
		if err != nil {
			return nil, err
		}
		c.disks = disks
	}
	// The Dial field is set before the first Admin call (Start makes none).
	lc, err := localcluster.Start(ctx, ls)
	if err != nil {
		if lc != nil {
			_ = lc.Stop()
		}
		_ = unmountDisks(c.disks)
		return nil, fmt.Errorf("phxcluster: start: %w", err)
	}
	c.lc = lc
	lc.Dial = func(ctx context.Context, addr string) (net.Conn, error) { return spec.Dial(ctx, "tcp", addr) }
	cr, err := config.LoadCredentials(filepath.Join(spec.Dir, "credentials.json"))
	if err != nil {
		_ = c.Stop()
		return nil, fmt.Errorf("phxcluster: %w", err)
	}
	c.dialNet = "phxcluster-" + spec.NetNS
	mysql.RegisterDialContext(c.dialNet, func(ctx context.Context, addr string) (net.Conn, error) {
		return spec.Dial(ctx, "tcp", addr)
	})
	for i := 1; i <= spec.Nodes; i++ {
		id := uint32(i)
		n := cluster.Node{ID: id, Host: spec.Hosts[i-1], User: cr.AppUser, Password: cr.AppPassword,
			Witness: ls.IsWitness(i), Learner: ls.IsLearner(i)}
		if !n.Witness { // a witness has no MariaDB and no proxy
			n.ProxyAddr, n.RWSplitAddr, n.MySQLAddr = lc.ProxyAddr(id), lc.RWSplitAddr(id), lc.MySQLAddr(id)
		}
		c.nodes = append(c.nodes, n)
	}
	slog.Info("phxcluster: started", "nodes", spec.Nodes, "witnesses", spec.Witnesses, "learners", spec.Learners, "dir", spec.Dir, "netns", spec.NetNS)
	return c, nil
}

// Cluster implements cluster.Cluster over a localcluster.Cluster.
type Cluster struct {
	spec    cluster.LaunchSpec
	lc      *localcluster.Cluster
	nodes   []cluster.Node
	dialNet string // go-sql-driver network that dials into the namespace

	mu       sync.Mutex
	paused   map[uint32][]int      // pids SIGSTOPped by Pause, per node
	dbReady  bool                  // the jepsen database exists
	disks    map[uint32]*lazyfs.FS // Options.LazyFS: each node's directory
	reseeded []Reseed              // nodes reseeded after losing their datadir (reseed.go)
	stopOnce sync.Once
	stopErr  error
}

var _ cluster.Cluster = (*Cluster)(nil)

// Nodes lists the members in ID order.
func (c *Cluster) Nodes() []cluster.Node { return append([]cluster.Node(nil), c.nodes...) }

// Local is the underlying localcluster (for tests and debugging).
func (c *Cluster) Local() *localcluster.Cluster { return c.lc }

// witness reports whether node id is a witness (binlogd only).
func (c *Cluster) witness(id uint32) bool { return c.lc.Spec.IsWitness(int(id)) }

// openDB opens a one-connection pool through the namespace to addr.
func (c *Cluster) openDB(addr, db string) (*sql.DB, error) {
	cfg := mysql.NewConfig()
	cfg.User, cfg.Passwd = c.nodes[0].User, c.nodes[0].Password
	cfg.Net, cfg.Addr, cfg.DBName = c.dialNet, addr, db
	cfg.Timeout, cfg.ReadTimeout, cfg.WriteTimeout = 2*time.Second, 5*time.Second, 5*time.Second
	d, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		return nil, err
	}
	d.SetMaxOpenConns(1)
	return d, nil
}

func itoa(id uint32) string { return strconv.FormatUint(uint64(id), 10) }
