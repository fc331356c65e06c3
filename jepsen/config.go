package jepsen

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"phxgo/jepsen/cluster"
	"phxgo/jepsen/nemesis"
	"phxgo/jepsen/workload"
)

// Aliases so callers need only this package.
type (
	Cluster    = cluster.Cluster
	Node       = cluster.Node
	LaunchSpec = cluster.LaunchSpec
	Launcher   = cluster.Launcher
)

// Errors.
var (
	// ErrConfig: a bad flag value; the message names it.
	ErrConfig = errors.New("bad config")
	// ErrNoLauncher: Run was given no way to start a cluster.
	ErrNoLauncher = errors.New("no cluster launcher")
	// ErrNotHealthy: the cluster did not become healthy in time.
	ErrNotHealthy = errors.New("cluster not healthy")
)

// NSPrefix names the harness's namespaces: NSPrefix + pid.
const NSPrefix = "phxjepsen-"

// Config of one run (the cmd/jepsen flags).
type Config struct {
	Workload    string
	Nemesis     string // comma list of nemesis.Kinds, "all" or "none"
	Time        time.Duration
	Concurrency int
	Rate        float64 // ops/s over all clients, 0 = as fast as possible
	Nodes       int     // every node, witnesses and learners included
	// Witnesses and Learners are how many of the Nodes are witnesses
	// (binlogd only: they vote, run no MariaDB or proxy, get faults but
	// no clients) and learners (a data node that never votes; its proxy
	// serves clients like any). Ids: voters first, then witnesses, then
	// learners (localcluster.RoleIDs).
	Witnesses int
	Learners  int
	Seed      uint64
	OutDir    string // results; default jepsen-results/<workload>-<nemesis>-<time>
	Lease     time.Duration
	BinDir    string
	OpTimeout time.Duration // per operation
	Workloads workload.Options
	// KeepData keeps the cluster's scratch directory (data, Paxos logs)
	// after a run that is not valid, for debugging.
	KeepData bool
	// RWSplit connects the clients to each node's read/write-split port
	// (append only; its read-only transactions become one SELECT there,
	// which a replica may serve; see checker.Append).
	RWSplit bool
	// LatencyBound, if > 0, adds checker.Latency: no operation may wait
	// longer than this with no fault in place. Must be below OpTimeout,
	// or the client's own timeout would hide a hang.
	LatencyBound time.Duration
	// Schedule, if set, replaces nemesis.DefaultSchedule (its Kinds are
	// taken from Nemesis). Tests set it whole; cmd/jepsen's -quiet sets
	// the default with a longer Quiet (a 2 GiB load between faults).
	Schedule *nemesis.Schedule
}

// DefaultConfig returns a 60 s register run against 3 nodes.
func DefaultConfig() Config {
	return Config{
		Workload: "register", Nemesis: "all", Time: 60 * time.Second, Concurrency: 10,
		Rate: 100, Nodes: 3, Seed: uint64(time.Now().UnixNano()), Lease: 5 * time.Second,
		BinDir: "bin", OpTimeout: 5 * time.Second, Workloads: workload.DefaultOptions(),
	}
}

// Validate checks fields against each other and fills OutDir.
func (c *Config) Validate() error {
	bad := func(key, format string, a ...any) error {
		return fmt.Errorf("%w: -%s: %s", ErrConfig, key, fmt.Sprintf(format, a...))
	}
	if !workload.Valid(c.Workload) {
		return bad("workload", "%q is not one of %s", c.Workload, strings.Join(workload.Names, ", "))
	}
	if _, err := nemesis.ParseKinds(c.Nemesis); err != nil {
		return bad("nemesis", "%v", err)
	}
	switch {
	case c.Time <= 0:
		return bad("time", "must be > 0, got %s", c.Time)
	case c.Concurrency < 1:
		return bad("concurrency", "must be >= 1, got %d", c.Concurrency)
	case c.Rate < 0:
		return bad("rate", "must be >= 0, got %g", c.Rate)
	case c.Nodes < 1 || c.Nodes > 200:
		return bad("nodes", "must be in 1..200, got %d", c.Nodes)
	case c.Witnesses < 0 || c.Learners < 0 || c.Nodes-c.Witnesses-c.Learners < 1:
		return bad("witnesses", "%d witnesses and %d learners of %d nodes: at least one node must vote and run MariaDB", c.Witnesses, c.Learners, c.Nodes)
	case c.Lease <= 0:
		return bad("lease", "must be > 0, got %s", c.Lease)
	case c.OpTimeout <= 0:
		return bad("op-timeout", "must be > 0, got %s", c.OpTimeout)
	case c.Workload == "bank" && c.Workloads.Accounts < 2:
		return bad("accounts", "bank needs >= 2 accounts")
	case c.Workloads.Keys < 1 || c.Workloads.OpsPerKey < 1:
		return bad("keys", "keys and ops per key must be >= 1")
	case c.RWSplit && c.Workload != "append":
		return bad("rwsplit", "only the append workload knows what that port promises, not %s", c.Workload)
	case c.LatencyBound < 0 || (c.LatencyBound > 0 && c.LatencyBound >= c.OpTimeout):
		return bad("latency-bound", "%s must be >= 0 and below -op-timeout %s", c.LatencyBound, c.OpTimeout)
	}
	c.Workloads.RWSplit = c.RWSplit
	if c.OutDir == "" {
		c.OutDir = filepath.Join("jepsen-results",
			fmt.Sprintf("%s-%s-%s", c.Workload, strings.ReplaceAll(c.Nemesis, ",", "+"), time.Now().Format("20060102T150405")))
	}
	bin, err := filepath.Abs(c.BinDir)
	if err != nil {
		return bad("bin", "%v", err)
	}
	if st, err := os.Stat(bin); err != nil || !st.IsDir() {
		return bad("bin", "%s is not a directory (run `make build` first)", bin)
	}
	c.BinDir = bin
	return nil
}

// RoleIDs are the ids of the witnesses and of the learners among the
// Nodes (voters first, then witnesses, then learners).
func (c *Config) RoleIDs() (witnesses, learners []int) {
	voters := c.Nodes - c.Witnesses - c.Learners
	for i := 1; i <= c.Witnesses; i++ {
		witnesses = append(witnesses, voters+i)
	}
	for i := 1; i <= c.Learners; i++ {
		learners = append(learners, voters+c.Witnesses+i)
	}
	return witnesses, learners
}

// Hosts returns the node addresses: 127.0.0.2 .. 127.0.0.(n+1).
// 127.0.0.1 is the harness's (clients') own address and is never cut.
func Hosts(n int) []string {
	hs := make([]string, n)
	for i := range hs {
		hs[i] = fmt.Sprintf("127.0.0.%d", i+2)
	}
	return hs
}
