package node

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"

	"phxgo/binlogd/binlog"
	"phxgo/binlogd/capture"
	"phxgo/binlogd/config"
	"phxgo/binlogd/mtls"
	"phxgo/binlogd/mysqld"
	"phxgo/binlogd/rawnet"
	"phxgo/binlogd/replserver"
	"phxgo/binlogd/rolectl"
	"phxgo/internal/addrrate"
	"phxgo/masterlease"
	"phxgo/paxos"
	pb "phxgo/proto"
)

// Node is one running binlogd.
type Node struct {
	cfg  *config.Config
	cred config.Credentials
	log  *slog.Logger
	tls  *mtls.Material // nil: plain gRPC (tls.go); as loaded at start
	// tlsCur is what new handshakes use; Reload swaps it (tlsreload.go).
	tlsCur atomic.Pointer[mtls.Reloadable]
	level  *slog.LevelVar // nil: the level is not Reload's to change

	inst  *mysqld.Instance
	px    *paxos.Node
	lease *masterlease.Lease
	repl  *replserver.Server
	gs    *grpc.Server
	// hsLimit is the gRPC port's budget of new TLS handshakes per source
	// address (rpcrate.go); nil without TLS, where there is no key
	// exchange to save. peerIPsKick asks for its exempt addresses anew.
	hsLimit     *addrrate.Limiter
	peerIPsKick chan struct{}
	// proxyNetsKick asks proxyNetsLoop to set proxy_protocol_networks
	// now (proxynets.go).
	proxyNetsKick chan struct{}
	// peerLink: dial options for links to other nodes (paxos.PeerDialOptions)
	peerLink []grpc.DialOption
	http     *http.Server
	m        *metrics
	ret      *retention

	// linkTimeout is TCP_USER_TIMEOUT on the gRPC port's sockets, dialled
	// and accepted: paxos.LinkTimeout, gRPC's keepalive timeout
	// (linktimeout.go). Set by Run before any dial.
	linkTimeout time.Duration

	dbMu sync.Mutex
	db   *sql.DB // root over the unix socket; nil while mysqld is down

	mysqlUp  atomic.Bool
	applied  atomic.Pointer[binlog.GTID] // MariaDB's gtid_current_pos
	replInfo atomic.Pointer[string]
	unsafe   atomic.Pointer[string]
	// datadirLost: MariaDB's datadir cannot be recovered (datadir_lost.go).
	datadirLost atomic.Bool

	// ctl carries out the role controller (roles.go, binlogd/rolectl):
	// the only code that changes MariaDB's role.
	ctl     *roleDriver
	capture atomic.Pointer[capture.Capture] // this term's, for metrics; nil before the first
	// commitWaitCount is the binlog_commit_wait_count binlogd last set (groupwait.go).
	commitWaitCount atomic.Int64
	// commitWaitUsec is the binlog_commit_wait_usec binlogd last set, µs.
	commitWaitUsec atomic.Int64
	lagSecs        atomic.Int64 // Seconds_Behind_Master; -1 unknown or not replicating

	stopping  atomic.Bool
	keepMySQL atomic.Bool // a graceful stop hands MariaDB off (handover.go)
	win       readWindows // read windows granted to proxies (windows.go)

	// testHookStopping, when set by a test, runs once stopping has begun
	// (health NOT_SERVING) and before anything is torn down.
	testHookStopping func()
}

// New checks the config and credentials; Run starts everything.
func New(cfg *config.Config, logger *slog.Logger) (*Node, error) {
	if logger == nil {
		logger = slog.Default()
	}
	logger = logger.With("node", cfg.ID)
	for _, w := range cfg.Warnings() {
		logger.Warn("config: " + w)
	}
	// A witness has no MariaDB and uses no MySQL secrets (witness.go):
	// inst stays nil, and nothing that would use it runs.
	var cred config.Credentials
	var inst *mysqld.Instance
	if !cfg.IsWitness() {
		var err error
		if cred, err = cfg.LoadCredentials(); err != nil {
			return nil, err
		}
		host, port := cfg.MySQLBind()
		inst, err = mysqld.New(mysqld.Options{
			Dir: cfg.MySQLDir, Host: host, Port: port, ServerID: cfg.ID,
			ApplyThreads: cfg.ReplicaApplyThreadsOrDefault(), Extra: cfg.MySQLExtra, Logger: logger,
			Nice: new(cfg.MySQLNiceOrDefault()),
			// MariaDB serves TLS with the node's certificate: the other
			// nodes' proxies reach it over TCP (sqlproxy verifies it).
			TLS: mysqld.TLSFiles{Cert: cfg.TLSCert, Key: cfg.TLSKey, CA: cfg.TLSCA},
		})
		if err != nil {
			return nil, err
		}
	}
	tlsm, err := cfg.TLS()
	if err != nil {
		return nil, err
	}
	n := &Node{cfg: cfg, cred: cred, log: logger, inst: inst, tls: tlsm, peerIPsKick: make(chan struct{}, 1), proxyNetsKick: make(chan struct{}, 1)}
	n.ret = &retention{n: n}
	n.ctl = newRoleDriver(n)
	zero := binlog.GTID{}
	n.applied.Store(&zero)
	n.lagSecs.Store(-1)
	return n, nil
}

// Run runs the node until ctx ends, then stops it safely.
func (n *Node) Run(ctx context.Context) error {
	self := n.cfg.Self()
	mlcfg := masterlease.DefaultConfig()
	mlcfg.LeaseDuration = n.cfg.LeaseDuration.Duration
	mlcfg.DriftMargin = n.cfg.DriftMargin.Duration
	mlcfg.RenewInterval = mlcfg.LeaseDuration / 3
	mlcfg.RetryInterval = mlcfg.LeaseDuration / 20
	lease, err := masterlease.New(mlcfg, n.cfg.ID, masterlease.SystemClock{}, n.log)
	if err != nil {
		return err
	}
	if n.cfg.BaseGTID != "" { // a cluster rebuilt from a backup (binlogd restore -new-cluster)
		g, err := binlog.ParseGTID(n.cfg.BaseGTID)
		if err != nil {
			return fmt.Errorf("base_gtid: %w", err)
		}
		lease.SetBase(masterlease.GTID(g))
	}
	n.lease = lease
	n.m = newMetrics(n) // before paxos: it observes commit latencies

	pcfg := paxos.DefaultConfig()
	pcfg.ID, pcfg.Peers, pcfg.Dir, pcfg.Logger = n.cfg.ID, n.cfg.Peers(), filepath.Join(n.cfg.Dir, "paxos"), n.log
	pcfg.MaxValueBytes = 8 << 20
	pcfg.Join = n.cfg.Join
	pcfg.Learners = n.cfg.Learners()
	pcfg.Thrifty = n.cfg.Thrifty()
	pcfg.WALSegmentBytes = walSegmentBytes(n.cfg.LogRetentionBytes)
	pcfg.WALPlainSync = !n.cfg.UseIOURing()
	pcfg.CompactBase = compactBaseWhole
	n.linkTimeout = paxos.LinkTimeout(pcfg) // before the first dial (linktimeout.go)
	// Every link to a member checks that the server is that member
	// (dialOptionTo): peerAdmin adds it per member, paxos per peer.
	n.peerLink = append(paxos.PeerDialOptions(pcfg), grpc.WithContextDialer(n.dialFromSelf))
	px, err := paxos.Start(pcfg, lease, paxos.WithDialOptions(grpc.WithContextDialer(n.dialFromSelf)),
		paxos.WithPeerDialOption(n.dialOptionTo),
		paxos.WithCommitObserver(func(d time.Duration) { n.m.commitLatency.Observe(d.Seconds()) }),
		paxos.WithStageObserver(stageObserver(n.m.reg)))
	if err != nil {
		return fmt.Errorf("paxos: %w", err)
	}
	n.px = px
	defer px.Stop()
	lease.Attach(n.gate(px)) // Fence/Switchover wait out granted read windows (windows.go)

	gl, err := listenRPC(ctx, n.cfg.GRPCListenAddr())
	if err != nil {
		return fmt.Errorf("listen grpc_listen %s (advertised as grpc_addr %s): %w", n.cfg.GRPCListenAddr(), self.GRPCAddr, err)
	}
	n.gs = grpc.NewServer(append(n.serverOptions(), append(paxos.GRPCServerOptions(pcfg), rpcGuardOptions()...)...)...)
	px.RegisterGRPC(n.gs)
	pb.RegisterAdminServer(n.gs, &adminServer{n: n})
	hs := registerHealth(n.gs)
	if n.tls != nil {
		n.hsLimit = addrrate.New(rpcHandshakeBudget())
		n.refreshPeerIPs(ctx) // before the first accept
	}
	rl := rpcListener(gl, maxRPCConns, maxRPCHandshakes, n.tls != nil, n.hsLimit, n.log)
	rl.prepare = acceptedLink{n.linkTimeout, n.log}.prepare // keepalive and TCP_USER_TIMEOUT, once admitted
	registerRPCGuardMetrics(n.m.reg, rl)
	go func() { _ = n.gs.Serve(rl) }()
	defer n.gs.Stop()

	witness := n.cfg.IsWitness()
	if !witness { // a witness serves no binlog (witness.go)
		rcfg := replserver.DefaultConfig()
		rcfg.Addr, rcfg.User, rcfg.Password = n.cfg.ReplAddr, n.cred.CaptureUser, n.cred.CapturePassword
		rcfg.ServerID, rcfg.Logger = rolectl.EndpointServerID(n.cfg.ID), n.log
		rcfg.HeartbeatPeriod = time.Second
		n.outsideReplicas(&rcfg)
		repl, err := replserver.New(rcfg, n.newLogSource())
		if err != nil {
			return err
		}
		rl, err := net.Listen("tcp", n.cfg.ReplAddr)
		if err != nil {
			return fmt.Errorf("listen repl_addr %s: %w", n.cfg.ReplAddr, err)
		}
		n.repl = repl
		go func() { _ = repl.Serve(rl) }()
		defer repl.Close()
	}

	if n.cfg.HTTPAddr != "" {
		if err := n.serveHTTP(n.cfg.HTTPListenAddr()); err != nil {
			return err
		}
		defer n.http.Close()
	}

	n.logLinkSecurity()
	n.log.Info("binlogd started", "grpc", self.GRPCAddr, "grpc_listen", n.cfg.GRPCListenAddr(), "repl", n.cfg.ReplAddr, "mysql", self.MySQLAddr, "mysql_listen", n.cfg.MySQLListenAddr(), "members", len(n.members()), "join", n.cfg.Join, "witness", witness)

	// The loops outlive ctx for as long as a stopping master hands over
	// (handover.go): the lease, the role loop and MariaDB's supervision
	// are what a switchover runs on.
	loopCtx, stopLoops := context.WithCancel(context.WithoutCancel(ctx))
	defer stopLoops()
	var wg sync.WaitGroup
	run := func(f func(context.Context)) {
		wg.Add(1)
		go func() { defer wg.Done(); f(loopCtx) }()
	}
	if n.cfg.SuperviseMySQL {
		run(n.supervise)
	}
	if !witness {
		run(n.poll)
		run(n.proxyNetsLoop) // proxynets.go
	}
	leaseCtx, stopLease := context.WithCancel(loopCtx)
	defer stopLease()
	n.watchStorage(loopCtx, hs, stopLease) // storage.go: a wal failure takes the node out
	run(func(context.Context) { _ = lease.Run(leaseCtx, n.canAcquire) })
	if witness {
		run(n.witnessLoop)
	} else {
		run(n.roleLoop)
		run(n.demotedMasterLoop) // learner.go
	}
	run(n.retentionLoop)
	run(n.warnInsecureLoop)
	run(n.watchPeerIPs)
	run(n.notifyReady)
	<-ctx.Done()
	hs.Shutdown() // NOT_SERVING while stopping
	n.stopping.Store(true)
	n.wakeLoops()
	if n.testHookStopping != nil {
		n.testHookStopping()
	}
	handoff := n.handOver()
	stopLoops()
	wg.Wait()
	n.shutdown(handoff)
	return nil
}

// canAcquire is the election condition: this node is no witness, its
// MariaDB is up, safe, and has applied the whole valid log, and the
// majority of the log digests it knows does not name its log the odd
// one (logdigest.go).
func (n *Node) canAcquire() bool {
	if n.witness() || n.learner() || !n.mysqlUp.Load() || n.unsafe.Load() != nil || n.stopping.Load() || !n.isMember() {
		return false
	}
	if logOdd(n.px.Status()) {
		return false
	}
	last, _ := n.lease.Position()
	return *n.applied.Load() == binlog.GTID(last)
}

func (n *Node) conn() *sql.DB {
	n.dbMu.Lock()
	defer n.dbMu.Unlock()
	return n.db
}

func (n *Node) setUnsafe(reason string) {
	n.unsafe.Store(&reason)
	n.wakeLoops()
	n.log.Error("node marked unsafe; it gives up the lease and will not ask for it again until restarted", "reason", reason)
}

var errNoMySQL = errors.New("binlogd: MariaDB is not running")

// dialFromSelf dials peers from this node's own gRPC listen address, so a
// node's traffic carries its address (partitions cut by address pairs, and
// firewalls see the member, not whatever the kernel picks). A node that
// listens on every interface (grpc_listen 0.0.0.0:PORT, e.g. behind NAT)
// lets the kernel pick: its advertised address may not be its own.
func (n *Node) dialFromSelf(ctx context.Context, addr string) (net.Conn, error) {
	d := net.Dialer{KeepAlive: 15 * time.Second}
	if ip := n.cfg.GRPCSourceIP(); ip != nil {
		d.LocalAddr = &net.TCPAddr{IP: ip}
	}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	if err := setLinkTimeout(c, n.linkTimeout); err != nil { // as gRPC fails a dial it cannot set it on
		c.Close()
		return nil, fmt.Errorf("set TCP_USER_TIMEOUT: %w", err)
	}
	return rawnet.Wrap(c), nil
}
