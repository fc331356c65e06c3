package localcluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"google.golang.org/grpc"

	"phxgo/binlogd/binlog"
	"phxgo/binlogd/mysqld"
	pb "phxgo/proto"
)

// Cluster is a started local cluster.
type Cluster struct {
	Spec Spec
	// Dial, when set, is used for gRPC and MySQL connections into the
	// cluster (the Jepsen harness dials into its namespace).
	Dial func(ctx context.Context, addr string) (net.Conn, error)

	mu    sync.Mutex
	conns map[uint32]*grpc.ClientConn
	gone  map[uint32]bool // removed from the cluster (members.go)

	sourceIPOnce sync.Once
	sourceIPOK   bool // the sqlproxy binary has -source-ip
}

// NodeInfo is one node's entry in cluster.json.
type NodeInfo struct {
	ID          uint32 `json:"id"`
	Voter       bool   `json:"voter"`   // votes on the log; false: a learner (Spec.Learners)
	Witness     bool   `json:"witness"` // binlogd only: no MariaDB, no sqlproxy, never master
	MySQLAddr   string `json:"mysql_addr"`
	BinlogdAddr string `json:"binlogd_addr"`
	ReplAddr    string `json:"repl_addr"`
	ProxyAddr   string `json:"proxy_addr"`
	HTTPAddr    string `json:"http_addr"`
	MariadbdPid int    `json:"mariadbd_pid"`
	BinlogdPid  int    `json:"binlogd_pid"`
	SqlproxyPid int    `json:"sqlproxy_pid"`
	Dir         string `json:"dir"`
}

// Info is cluster.json.
type Info struct {
	Nodes   []NodeInfo `json:"nodes"`
	NetNS   string     `json:"netns,omitempty"`
	AppUser string     `json:"app_user"`
	AppPass string     `json:"app_password"`
	// ReplUser and ReplPass are the outside replicas' account on every
	// node's replication endpoint (README "Outside replicas").
	ReplUser  string    `json:"repl_user,omitempty"`
	ReplPass  string    `json:"repl_password,omitempty"`
	StartedAt time.Time `json:"started_at"`
}

// Start writes configs (keeping existing data) and starts every process
// that is not already running. It does not wait for a master: see
// WaitHealthy.
func Start(ctx context.Context, spec Spec) (*Cluster, error) {
	if err := spec.validate(); err != nil {
		return nil, err
	}
	if err := spec.writeConfigs(); err != nil {
		return nil, err
	}
	c := &Cluster{Spec: spec, conns: map[uint32]*grpc.ClientConn{}}
	for id := 1; id <= spec.Nodes; id++ {
		if err := c.StartNode(uint32(id)); err != nil {
			c.Stop()
			return nil, err
		}
	}
	return c, c.WriteInfo()
}

// Open attaches to a cluster started earlier (e.g. by `make cluster`).
func Open(spec Spec) *Cluster {
	return &Cluster{Spec: spec, conns: map[uint32]*grpc.ClientConn{}}
}

func (c *Cluster) pidFile(id uint32, proc string) string {
	return filepath.Join(c.Spec.NodeDir(int(id)), proc+".pid")
}

// Pid returns the pid of proc (binlogd, sqlproxy, mariadbd) on node id, or
// 0 when it is not running.
func (c *Cluster) Pid(id uint32, proc string) int {
	p := c.pidFile(id, proc)
	if proc == "mariadbd" {
		p = filepath.Join(c.Spec.NodeDir(int(id)), "mysql", "mysqld.pid")
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || !mysqld.Alive(pid) {
		return 0
	}
	return pid
}

// StartNode starts node id's binlogd and sqlproxy if they are not running.
func (c *Cluster) StartNode(id uint32) error {
	dir := c.Spec.NodeDir(int(id))
	if c.Pid(id, "binlogd") == 0 {
		args := []string{"run", "-config", filepath.Join(dir, "binlogd.json")}
		if c.Spec.KeepMySQL {
			args = append(args, "-keep-mysql")
		}
		if err := c.spawn(id, "binlogd", args...); err != nil {
			return err
		}
	}
	if c.Spec.Proxy && !c.Spec.IsWitness(int(id)) && c.Pid(id, "sqlproxy") == 0 {
		if err := c.spawn(id, "sqlproxy", c.proxyArgs(id)...); err != nil {
			return err
		}
	}
	return nil
}

func (c *Cluster) proxyArgs(id uint32) []string {
	s := c.Spec
	args := []string{
		"-listen", s.addr(int(id), offProxy),
		"-rwsplit-listen", s.addr(int(id), offProxyRW),
		"-binlogd", s.addr(int(id), offGRPC),
		"-http", s.addr(int(id), offProxyHTTP),
		"-admin-user", "phxgo_proxy",
		"-admin-password-file", filepath.Join(s.Dir, "proxy-password"),
	}
	// The proxy reaches its own MariaDB by the unix socket: cheaper per
	// packet than loopback TCP (sqlproxy's -mysql-socket); the accounts
	// are user@'%', which a socket login (user@localhost) matches.
	args = append(args, "-mysql-socket", filepath.Join(s.NodeDir(int(id)), "mysql", "mysqld.sock"))
	args = append(args, s.proxyTLSArgs(int(id))...)
	// Node-to-node traffic carries the node's own address, so partitions
	// cut by address pairs also cut a proxy's forwarding to the master's.
	if len(s.Hosts) > 0 && c.proxyHasSourceIP() {
		args = append(args, "-source-ip", s.host(int(id)))
	}
	return args
}

// proxyHasSourceIP reports whether the sqlproxy binary knows -source-ip
// (read from its -h output once), so older binaries still start.
func (c *Cluster) proxyHasSourceIP() bool {
	c.sourceIPOnce.Do(func() {
		out, _ := exec.Command(filepath.Join(c.Spec.BinDir, "sqlproxy"), "-h").CombinedOutput()
		c.sourceIPOK = bytes.Contains(out, []byte("-source-ip"))
	})
	return c.sourceIPOK
}

func (c *Cluster) spawn(id uint32, proc string, args ...string) error {
	dir := c.Spec.NodeDir(int(id))
	logf, err := os.OpenFile(filepath.Join(dir, proc+".log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	bin := filepath.Join(c.Spec.BinDir, proc)
	if abs, err := filepath.Abs(bin); err == nil {
		bin = abs
	}
	argv := append([]string{bin}, args...)
	if c.Spec.NetNS != "" {
		argv = append([]string{"ip", "netns", "exec", c.Spec.NetNS}, argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Dir = dir
	if proc == "binlogd" {
		cmd.Env = binlogdEnv(os.Environ())
	}
	// Own session: outlives `make cluster`, untouched by a test's Ctrl-C.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("localcluster: start %s on node %d: %w", proc, id, err)
	}
	pid := cmd.Process.Pid
	go func() { _ = cmd.Wait() }() // reap; liveness is read from pid files
	return os.WriteFile(c.pidFile(id, proc), []byte(strconv.Itoa(pid)+"\n"), 0o644)
}

// Signal sends sig to proc on node id.
func (c *Cluster) Signal(id uint32, proc string, sig syscall.Signal) error {
	pid := c.Pid(id, proc)
	if pid == 0 {
		return fmt.Errorf("localcluster: %s on node %d is not running", proc, id)
	}
	return syscall.Kill(pid, sig)
}

// Kill SIGKILLs proc on node id and waits until it is gone.
func (c *Cluster) Kill(ctx context.Context, id uint32, proc string) error {
	pid := c.Pid(id, proc)
	if pid == 0 {
		return nil
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
	return waitGone(ctx, pid)
}

// Stop stops every process: sqlproxy and binlogd with SIGTERM (binlogd
// stops its MariaDB safely), then SIGKILL whatever is left.
func (c *Cluster) Stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var errs []error
	for id := 1; id <= c.Spec.Nodes; id++ {
		for _, proc := range []string{"sqlproxy", "binlogd"} {
			if pid := c.Pid(uint32(id), proc); pid != 0 {
				_ = syscall.Kill(pid, syscall.SIGTERM)
			}
		}
	}
	for id := 1; id <= c.Spec.Nodes; id++ {
		for _, proc := range []string{"sqlproxy", "binlogd", "mariadbd"} {
			if proc == "mariadbd" {
				c.stopMySQL(ctx, uint32(id))
			}
			pid := c.Pid(uint32(id), proc)
			if pid == 0 {
				continue
			}
			wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
			if waitGone(wctx, pid) != nil {
				_ = syscall.Kill(pid, syscall.SIGKILL)
				errs = append(errs, waitGone(ctx, pid))
			}
			wcancel()
		}
	}
	c.mu.Lock()
	for _, cc := range c.conns {
		cc.Close()
	}
	c.conns = map[uint32]*grpc.ClientConn{}
	c.mu.Unlock()
	_ = c.WriteInfo()
	return errors.Join(errs...)
}

// stopMySQL stops the MariaDB a stopped binlogd left running (Spec.KeepMySQL,
// or a killed binlogd) the safe way, with `binlogd stop-mysql`: never
// gracefully while commits wait for an ACK.
func (c *Cluster) stopMySQL(ctx context.Context, id uint32) {
	if c.Pid(id, "mariadbd") == 0 || c.Pid(id, "binlogd") != 0 {
		return
	}
	argv := []string{filepath.Join(c.Spec.BinDir, "binlogd"), "stop-mysql", "-config", filepath.Join(c.Spec.NodeDir(int(id)), "binlogd.json")}
	if c.Spec.NetNS != "" {
		argv = append([]string{"ip", "netns", "exec", c.Spec.NetNS}, argv...)
	}
	sctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	_ = exec.CommandContext(sctx, argv[0], argv[1:]...).Run() // what is left gets SIGKILL from the caller
}

// StopNode stops node id's sqlproxy and binlogd with SIGTERM and then its
// MariaDB (stop-mysql), and waits until all are gone.
func (c *Cluster) StopNode(ctx context.Context, id uint32) error {
	for _, proc := range []string{"sqlproxy", "binlogd"} {
		if pid := c.Pid(id, proc); pid != 0 {
			_ = syscall.Kill(pid, syscall.SIGTERM)
		}
	}
	for _, proc := range []string{"sqlproxy", "binlogd", "mariadbd"} {
		if proc == "mariadbd" {
			c.stopMySQL(ctx, id)
		}
		if pid := c.Pid(id, proc); pid != 0 {
			if err := waitGone(ctx, pid); err != nil {
				return err
			}
		}
	}
	return nil
}

// WriteInfo (re)writes cluster.json with current pids.
func (c *Cluster) WriteInfo() error {
	info := Info{NetNS: c.Spec.NetNS, StartedAt: time.Now().UTC()}
	if cr, err := loadCred(c.Spec.Dir); err == nil {
		info.AppUser, info.AppPass = cr.AppUser, cr.AppPassword
		info.ReplUser, info.ReplPass = cr.ReplUser, cr.ReplPassword
	}
	for _, id := range c.IDs() {
		m := c.Spec.member(int(id))
		repl := c.Spec.addr(int(m.ID), offRepl)
		if m.Witness {
			repl = "" // no MariaDB, no replication endpoint
		}
		info.Nodes = append(info.Nodes, NodeInfo{
			ID: m.ID, Voter: !c.Spec.IsLearner(int(m.ID)), Witness: m.Witness, MySQLAddr: m.MySQLAddr, BinlogdAddr: m.GRPCAddr, ReplAddr: repl, ProxyAddr: m.ProxyAddr,
			HTTPAddr:    c.Spec.addr(int(m.ID), offHTTP),
			MariadbdPid: c.Pid(m.ID, "mariadbd"), BinlogdPid: c.Pid(m.ID, "binlogd"), SqlproxyPid: c.Pid(m.ID, "sqlproxy"),
			Dir: c.Spec.NodeDir(int(m.ID)),
		})
	}
	b, err := json.MarshalIndent(info, "", "  ")
	if err != nil {
		return err
	}
	return writeSecret(filepath.Join(c.Spec.Dir, "cluster.json"), append(b, '\n')) // holds the app password
}

// Admin returns a gRPC admin client for node id.
func (c *Cluster) Admin(id uint32) (pb.AdminClient, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cc, ok := c.conns[id]; ok {
		return pb.NewAdminClient(cc), nil
	}
	creds, err := c.Spec.adminCreds(id)
	if err != nil {
		return nil, err
	}
	opts := []grpc.DialOption{creds}
	if c.Dial != nil {
		opts = append(opts, grpc.WithContextDialer(c.Dial))
	}
	cc, err := grpc.NewClient(c.Spec.addr(int(id), offGRPC), opts...)
	if err != nil {
		return nil, err
	}
	c.conns[id] = cc
	return pb.NewAdminClient(cc), nil
}

// Status asks node id's binlogd for its status.
func (c *Cluster) Status(ctx context.Context, id uint32) (*pb.NodeStatus, error) {
	a, err := c.Admin(id)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	return a.Status(ctx, &pb.StatusRequest{})
}

// Healthy reports whether exactly one ready master exists in every node's
// view and every node's MariaDB has applied the whole valid log. The
// error says what is missing.
func (c *Cluster) Healthy(ctx context.Context) (master uint32, err error) {
	return c.HealthyUpTo(ctx, nil)
}

// HealthyUpTo is Healthy, except that with target non-nil a replica whose
// MariaDB has applied the valid log up to *target counts as caught up:
// while writes go on, a replica is always a few transactions behind the
// newest, so the exact check may never hold. A zero *target is set to
// the master's last valid GTID the first time only replicas' lag is
// missing; a waiter passes the same target on every try. Replicas apply
// only the valid log, and with one domain in strict mode its sequence
// numbers only grow, so reaching target's sequence number is reaching
// target.
func (c *Cluster) HealthyUpTo(ctx context.Context, target *binlog.GTID) (master uint32, err error) {
	var sts []*pb.NodeStatus
	for _, id := range c.IDs() {
		st, err := c.Status(ctx, id)
		if err != nil {
			return 0, fmt.Errorf("node %d: %w", id, err)
		}
		sts = append(sts, st)
	}
	if err := logsAgree(sts); err != nil {
		return 0, err
	}
	var lastValid string
	for _, st := range sts {
		if st.Role == pb.Role_ROLE_MASTER && st.Ready {
			if master != 0 {
				return 0, fmt.Errorf("two masters: %d and %d", master, st.NodeId)
			}
			master = st.NodeId
			lastValid = st.LastValidGtid
		}
	}
	if master == 0 {
		return 0, errors.New("no ready master")
	}
	for _, st := range sts {
		if st.MasterId != master {
			return 0, fmt.Errorf("node %d sees master %d, not %d", st.NodeId, st.MasterId, master)
		}
		if st.Role == pb.Role_ROLE_UNSAFE {
			return 0, fmt.Errorf("node %d unsafe: %s", st.NodeId, st.UnsafeReason)
		}
		if st.Role == pb.Role_ROLE_WITNESS {
			continue // no MariaDB to replicate
		}
		if st.NodeId != master && !strings.Contains(st.ReplicationState, "Slave_IO_Running=Yes Slave_SQL_Running=Yes") {
			return 0, fmt.Errorf("node %d not replicating: %s", st.NodeId, st.ReplicationState)
		}
	}
	for _, st := range sts {
		if st.NodeId != master && st.Role != pb.Role_ROLE_WITNESS && !reached(st, lastValid, target) {
			if target != nil && target.IsZero() {
				*target, _ = binlog.ParseGTID(lastValid)
			}
			return 0, fmt.Errorf("node %d MariaDB at %q, log at %q (%s)", st.NodeId, st.MysqlGtidPos, st.LastValidGtid, st.ReplicationState)
		}
	}
	return master, nil
}

// logsAgree fails if a node reported a divergence of its Paxos log from
// a peer's, or two nodes hold different digests of the same log range
// (paxos/digest.go): a forked log is never healthy.
func logsAgree(sts []*pb.NodeStatus) error {
	type rng struct{ first, last uint64 }
	seen := map[rng]*pb.NodeStatus{}
	for _, st := range sts {
		for _, d := range st.LogDivergences {
			return fmt.Errorf("node %d: its log diverged from node %d's at indexes [%d, %d]", st.NodeId, d.Peer, d.First, d.Last)
		}
		for _, d := range st.LogDigests {
			k := rng{d.First, d.Last}
			if o := seen[k]; o == nil {
				seen[k] = st
			} else if i := slices.IndexFunc(o.LogDigests, func(x *pb.LogDigest) bool { return x.First == d.First && x.Last == d.Last }); !bytes.Equal(o.LogDigests[i].Sum, d.Sum) {
				return fmt.Errorf("nodes %d and %d hold different log digests of indexes [%d, %d]", o.NodeId, st.NodeId, d.First, d.Last)
			}
		}
	}
	return nil
}

// reached reports whether a replica's MariaDB has applied the master's
// last valid GTID (or its own binlogd's), or target.
func reached(st *pb.NodeStatus, lastValid string, target *binlog.GTID) bool {
	if st.MysqlGtidPos == lastValid || st.MysqlGtidPos == st.LastValidGtid {
		return true
	}
	if target == nil || target.IsZero() {
		return false
	}
	pos, err := binlog.ParseGTIDList(st.MysqlGtidPos)
	if err != nil {
		return false
	}
	g, ok := pos.Domain(target.Domain)
	return ok && g.Seq >= target.Seq
}

// WaitHealthy waits until HealthyUpTo holds with one target for all tries
// (replicas caught up with the log as of the wait), logging progress to
// progress (may be nil) once a second.
func (c *Cluster) WaitHealthy(ctx context.Context, progress func(string)) (uint32, error) {
	var last error
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	report := time.Now()
	var target binlog.GTID
	for {
		m, err := c.HealthyUpTo(ctx, &target)
		if err == nil {
			return m, nil
		}
		last = err
		if progress != nil && time.Since(report) > time.Second {
			progress(err.Error())
			report = time.Now()
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("localcluster: not healthy: %v (%w)", last, ctx.Err())
		case <-tick.C:
		}
	}
}

func waitGone(ctx context.Context, pid int) error {
	for mysqld.Alive(pid) {
		select {
		case <-ctx.Done():
			return fmt.Errorf("localcluster: pid %d still alive: %w", pid, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
	return nil
}
