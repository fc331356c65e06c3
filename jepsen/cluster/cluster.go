package cluster

import (
	"context"
	"net"
	"os/exec"
	"time"
)

// Node is one cluster member as clients and the nemesis see it.
type Node struct {
	ID        uint32 `json:"id"`
	Host      string `json:"host"`       // 127.0.0.x inside the namespace
	ProxyAddr string `json:"proxy_addr"` // sqlproxy host:port (linearizable port)
	// RWSplitAddr is the sqlproxy's read/write-split port ("" if none):
	// reads outside transactions may be served by a replica.
	RWSplitAddr string `json:"rwsplit_addr,omitempty"`
	MySQLAddr   string `json:"mysql_addr"` // the node's MariaDB host:port
	User        string `json:"user"`       // client account (see package doc)
	Password    string `json:"-"`
	// Witness: binlogd only (votes on the log, never master): no proxy
	// and no MariaDB (ProxyAddr, RWSplitAddr and MySQLAddr empty), so
	// clients and final reads skip it; faults may hit it (its binlogd).
	Witness bool `json:"witness,omitempty"`
	// Learner: a data node that follows the log and serves reads, never
	// votes and is never master. Its proxy is a client entry like any.
	Learner bool `json:"learner,omitempty"`
}

// HasMariaDB reports whether n runs MariaDB and a proxy (not a witness).
func (n Node) HasMariaDB() bool { return !n.Witness }

// Cluster is what the harness drives. Methods may be called concurrently.
type Cluster interface {
	// Nodes lists the members, in ID order.
	Nodes() []Node
	// Pids of a node's processes, 0 for one not running.
	Pids(id uint32) (mysqld, binlogd, sqlproxy int)

	// KillMysqld SIGKILLs the node's mariadbd.
	KillMysqld(id uint32) error
	// KillBinlogd SIGKILLs the node's binlogd.
	KillBinlogd(id uint32) error
	// KillNode SIGKILLs all three processes of the node.
	KillNode(id uint32) error
	// Restart starts whatever is down on the node and returns once it runs
	// (not necessarily caught up; WaitHealthy is for that).
	Restart(ctx context.Context, id uint32) error

	// Pause SIGSTOPs the node's binlogd, or all its processes if whole.
	Pause(id uint32, whole bool) error
	// Resume SIGCONTs whatever Pause stopped on the node; no-op otherwise.
	Resume(id uint32) error

	// Master returns the node the cluster currently considers master.
	// An error means none is known right now (election in progress).
	Master(ctx context.Context) (uint32, error)
	// WaitHealthy returns once there is exactly one master and every node
	// replicates from the log, or ctx ends.
	WaitHealthy(ctx context.Context) error

	// Stop SIGKILLs (or stops) every process. Idempotent.
	Stop() error
}

// LaunchSpec is what the harness asks a Launcher to start.
type LaunchSpec struct {
	Dir           string        // scratch directory for data, removed after the run
	LogDir        string        // kept after the run (inside the results dir): put logs here
	NetNS         string        // network namespace name
	Hosts         []string      // Hosts[i] is node i+1's address (127.0.0.2, ...)
	Nodes         int           // == len(Hosts), witnesses and learners included
	Witnesses     []int         // ids of the nodes that are witnesses (binlogd only)
	Learners      []int         // ids of the nodes that are learners
	LeaseDuration time.Duration // master lease
	BinDir        string        // binaries from `make build` (binlogd, sqlproxy, ...)
	// Command builds a command that runs inside NetNS.
	Command func(ctx context.Context, name string, args ...string) *exec.Cmd
	// Dial connects from inside NetNS (source 127.0.0.1), for the
	// launcher's own health and admin queries.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

// Launcher starts a cluster. It must clean up after itself if it fails.
type Launcher func(ctx context.Context, spec LaunchSpec) (Cluster, error)
