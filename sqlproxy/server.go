package sqlproxy

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"phxgo/internal/addrrate"
	"phxgo/internal/ratelog"
	"phxgo/sqlproxy/auth"
	"phxgo/sqlproxy/classify"
	"phxgo/sqlproxy/topology"
	"phxgo/sqlproxy/wire"
)

// Authenticator verifies a client's mysql_native_password token for the
// account that applies to a client at that address and returns
// SHA1(password) and which account it was. *auth.Store is the real one.
// Errors: auth.ErrDenied, auth.ErrUnavailable.
type Authenticator interface {
	Verify(ctx context.Context, user string, client auth.Client, salt, token []byte) (auth.Account, error)
}

// packetLimiter is an Authenticator that can read the master's
// max_allowed_packet (auth.Store).
type packetLimiter interface {
	MaxAllowedPacket(ctx context.Context) (int, error)
}

// Server is a MySQL-protocol proxy in front of the cluster.
type Server struct {
	cfg     Config
	topo    topology.Topology
	auth    Authenticator
	log     *slog.Logger
	metrics *Metrics
	pool    *pool
	health  *health
	dial    DialFunc    // every outgoing connection (Config.SourceIP)
	beDial  DialFunc    // session backends: dial, or this node's MariaDB socket
	peerTLS *tls.Config // server side of hop TLS; nil when Config.PeerTLS is
	reload  reloadState // rules and level in force (reload.go)
	// freshMode: the classify.SQLMode MariaDB's last new login started
	// with (the global sql_mode's NO_BACKSLASH_ESCAPES), a new session's
	// until its first answer says otherwise.
	freshMode atomic.Uint32
	// loginFails: each client address's budget of failed logins.
	loginFails *addrrate.Failures

	connID atomic.Uint32
	// stmtBytes: the prepared statement text all sessions keep (stmtbudget.go).
	stmtBytes  atomic.Int64
	stmtBudget stmtBudget
	rr         atomic.Uint64
	acc        wire.Acceptor // client connections, at most MaxConnections

	// Refusals before login, logged at most once per refusalLogEvery
	// each (ratelog.go).
	hopLog, deniedLog, unavailLog, blockedLog ratelog.Limiter
	headerLog                                 ratelog.Limiter // MariaDB refused a PROXY header (proxyproto.go)

	ctx       context.Context
	cancel    context.CancelFunc
	closeOnce sync.Once
	wg        sync.WaitGroup // health and sweep loops
}

// New returns a Server; call Serve for each listener.
func New(cfg Config, topo topology.Topology, a Authenticator) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if topo == nil || a == nil {
		return nil, fmt.Errorf("%w: topology and authenticator are required", ErrConfig)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Metrics == nil {
		cfg.Metrics = NewMetrics(nil)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{cfg: cfg, topo: topo, auth: a, log: cfg.Logger, metrics: cfg.Metrics,
		pool: newPool(256, cfg.IdleTimeout), ctx: ctx, cancel: cancel, stmtBudget: cfg.stmtBudget}
	if s.stmtBudget == (stmtBudget{}) {
		s.stmtBudget = defaultStmtBudget
	}
	s.hopLog.Every, s.deniedLog.Every, s.unavailLog.Every = refusalLogEvery, refusalLogEvery, refusalLogEvery
	s.blockedLog.Every, s.headerLog.Every = refusalLogEvery, refusalLogEvery
	fails, err := addrrate.NewFailures(cfg.LoginFailureBurst, cfg.LoginFailureEvery)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	s.loginFails = fails
	s.dial = DialFrom(cfg.SourceIP, cfg.DialTimeout)
	s.acc.Max = cfg.MaxConnections
	s.acc.Refuse = func(nc net.Conn) { go s.refuseFull(nc) }
	if s.cfg.DenyUsers == nil {
		s.cfg.DenyUsers, _ = ParseDenyUsers(DefaultDenyUsers)
	}
	if s.cfg.Allow == nil {
		s.cfg.Allow = mustParseAllow(DefaultAllow)
	}
	if cfg.PeerTLS != nil {
		s.peerTLS = cfg.PeerTLS.ServerOptionalClient()
	}
	if err := s.initReload(); err != nil {
		cancel()
		return nil, err
	}
	s.beDial = s.dial
	if sock := cfg.MySQLSocket; sock != "" {
		d := net.Dialer{Timeout: cfg.DialTimeout}
		s.beDial = func(ctx context.Context, network, addr string) (net.Conn, error) {
			if self := topo.View().SelfMySQLAddr; self != "" && addr == self {
				return d.DialContext(ctx, "unix", sock)
			}
			return s.dial(ctx, network, addr)
		}
	}
	s.health = newHealth(s)
	s.wg.Add(2)
	go func() { defer s.wg.Done(); s.health.run(ctx) }()
	go func() { defer s.wg.Done(); s.sweepLoop(ctx) }()
	return s, nil
}

// Serve accepts clients on ln with the given routing mode until Close.
// It returns ErrClosed after Close, or the accept error.
func (s *Server) Serve(ln net.Listener, mode Mode) error {
	err := s.acc.Serve(ln, func(nc net.Conn) { s.handle(nc, mode) })
	if errors.Is(err, wire.ErrClosed) {
		return ErrClosed
	}
	return err
}

// Close stops the listeners, closes client connections (open
// transactions are rolled back by closing their backends) and waits.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		_ = s.acc.Stop()
		s.cancel()
		s.acc.Wait()
		s.wg.Wait()
		s.pool.closeAll()
	})
	return nil
}

func (s *Server) sweepLoop(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			v := s.topo.View()
			s.pool.sweep(func(addr string) bool {
				if addr == v.MasterProxyAddr || addr == v.MasterMySQLAddr {
					return true
				}
				for _, r := range v.Replicas {
					if r.MySQLAddr == addr {
						return true
					}
				}
				return false
			})
		}
	}
}

func (s *Server) handle(nc net.Conn, mode Mode) {
	if host, ok := s.allowed(nc.RemoteAddr()); !ok {
		s.refuseHost(nc, host)
		nc.Close()
		return
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	if err := setClientPeerTimeout(nc, s.cfg.PeerTimeout); err != nil {
		s.log.Warn("sqlproxy: cannot set peer timeout on client connection", "remote", nc.RemoteAddr(), "err", err)
	}
	sess := &session{srv: s, mode: mode, cl: wire.NewConnRaw(nc, preLoginBuffer), id: s.connID.Add(1),
		stmts: map[uint32]*pstmt{}, client: auth.ClientFromAddr(nc.RemoteAddr()),
		sqlMode: classify.SQLMode(s.freshMode.Load())}
	s.metrics.conns.WithLabelValues(mode.String()).Inc()
	defer s.metrics.conns.WithLabelValues(mode.String()).Dec()
	defer nc.Close()
	defer s.recoverSession(sess)
	defer sess.forgetStmts() // the proxy-wide count (stmtbudget.go)
	if err := sess.login(); err != nil {
		s.log.Debug("sqlproxy: login failed", "remote", nc.RemoteAddr(), "err", err)
		s.metrics.errors.WithLabelValues("login").Inc()
		return
	}
	s.acc.Admit(nc)
	err := sess.serve()
	sess.finish()
	if err != nil && !errors.Is(err, errQuit) {
		s.log.Debug("sqlproxy: session ended", "id", sess.id, "err", err)
	}
}

var errQuit = errors.New("client quit")

// login runs the server side of the handshake and verifies the client.
func (sess *session) login() error {
	s := sess.srv
	nc := sess.cl.Conn
	_ = nc.SetDeadline(time.Now().Add(s.cfg.LoginTimeout))
	sess.cl.Limit = wire.MaxHandshakePacket
	salt := wire.NewSalt()
	caps := uint32(wire.ServerCaps)
	if s.peerTLS != nil {
		caps |= wire.ClientSSL // for the hop (security.go)
	}
	g := &wire.Greeting{Version: s.cfg.ServerVersion, ConnID: sess.id, Salt: salt,
		Caps: caps, Charset: 45, Status: wire.StatusAutocommit, Plugin: wire.NativePlugin}
	if err := sess.cl.WriteFlush(g.Encode()); err != nil {
		return err
	}
	p, err := sess.readPreLogin()
	if err != nil {
		return err
	}
	var hopPeer uint32 // N of a phxgo://proxy/N client certificate from the cluster CA
	overTLS := false   // the client speaks TLS to this proxy
	if s.peerTLS != nil && wire.IsSSLRequest(p) {
		ctx, cancel := context.WithTimeout(s.ctx, 10*time.Second)
		cl, v, err := startServerTLS(ctx, sess.cl, s.peerTLS)
		cancel()
		if err != nil {
			s.metrics.refused.WithLabelValues("tls_handshake").Inc()
			return err
		}
		sess.cl, hopPeer, overTLS = cl, v, true
		sess.cl.Limit = wire.MaxHandshakePacket
		if p, err = sess.readPreLogin(); err != nil {
			return err
		}
	}
	resp, err := wire.ParseResponse(p)
	if err != nil {
		_ = sess.cl.WriteFlush(errBadHandshake.Packet())
		return err
	}
	token := resp.Auth
	if resp.Plugin != "" && resp.Plugin != wire.NativePlugin {
		if err := sess.cl.WriteFlush(wire.AuthSwitch(salt)); err != nil {
			return err
		}
		if token, err = sess.readPreLogin(); err != nil {
			return err
		}
	}
	sess.user, sess.caps, sess.charset = resp.User, resp.Caps&wire.ServerCaps, resp.Charset
	sess.multibyte = classify.PairCollations[resp.Charset]
	sess.hop = resp.Attrs[hopAttr] == "1"
	if sess.hop && s.peerTLS != nil && hopPeer == 0 {
		s.metrics.refused.WithLabelValues("hop_tls").Inc()
		if ok, held := s.hopLog.Allow(time.Now()); ok {
			s.log.Warn("sqlproxy: refused a forwarding hop without TLS and a CA certificate", "remote", nc.RemoteAddr().String(), "unlogged_before", held)
		}
		_ = sess.cl.WriteFlush(errHopNeedsTLS.Packet())
		return errHopNeedsTLS
	}
	if sess.hop && hopPeer != 0 && !memberProxy(s.topo.View(), s.topo.Self(), hopPeer) {
		s.metrics.refused.WithLabelValues("hop_not_member").Inc()
		if ok, held := s.hopLog.Allow(time.Now()); ok {
			s.log.Warn("sqlproxy: refused a forwarding hop from the proxy of a node that is not a member", "proxy", hopPeer, "remote", nc.RemoteAddr().String(), "unlogged_before", held)
		}
		werr := &wire.Error{Code: 1045, SQLState: "28000", Message: fmt.Sprintf(
			"phxgo: proxy %d's certificate makes no hop: node %d is not a member of the cluster", hopPeer, hopPeer)}
		_ = sess.cl.WriteFlush(werr.Packet())
		return werr
	}
	sess.client = clientOf(nc, resp.Attrs, sess.hop && hopPeer != 0)
	host := sess.client.Addr()
	if err := sess.checkFailureBudget(resp.User); err != nil {
		return err
	}
	if s.deniedUser(resp.User) {
		s.metrics.refused.WithLabelValues("denied_user").Inc()
		if ok, held := s.deniedLog.Allow(time.Now()); ok {
			s.log.Info("sqlproxy: refused a login as a denied user", "user", ratelog.Cut(resp.User, maxLoggedUser), "client", host, "remote", nc.RemoteAddr().String(), "unlogged_before", held)
		}
		s.loginFails.Failed(sess.client.NetipAddr(), resp.User, time.Now())
		_ = sess.cl.WriteFlush(accessDenied(resp.User, host, len(token) > 0).Packet())
		return auth.ErrDenied
	}
	ctx, cancel := context.WithTimeout(s.ctx, 5*time.Second)
	acct, err := s.auth.Verify(ctx, resp.User, sess.client, salt, token)
	cancel()
	if err != nil {
		werr := accessDenied(resp.User, host, len(token) > 0)
		if !errors.Is(err, auth.ErrUnavailable) {
			s.loginFails.Failed(sess.client.NetipAddr(), resp.User, time.Now())
		} else {
			werr = &wire.Error{Code: 1045, SQLState: "28000", Message: "phxgo: cannot verify credentials now: no server answered"}
			if ok, held := s.unavailLog.Allow(time.Now()); ok {
				s.log.Warn("sqlproxy: credentials unavailable", "user", ratelog.Cut(resp.User, maxLoggedUser), "err", err, "unlogged_before", held)
			}
		}
		_ = sess.cl.WriteFlush(werr.Packet())
		return err
	}
	if acct.RequireTLS && !overTLS {
		// MariaDB would judge only the proxy's own link, TLS between
		// hosts. The password was right: say what to change.
		s.metrics.refused.WithLabelValues("needs_tls").Inc()
		werr := &wire.Error{Code: 1045, SQLState: "28000", Message: fmt.Sprintf(
			"Access denied for user '%s'@'%s': the account requires TLS (REQUIRE SSL/X509); connect to the proxy with TLS", resp.User, host)}
		_ = sess.cl.WriteFlush(werr.Packet())
		return auth.ErrDenied
	}
	sess.stage1 = string(acct.Stage1)
	// MariaDB takes a unix socket login for one without TLS: an account
	// that requires TLS goes by TCP, in TLS (Config.MySQLTLS).
	sess.socketOK = acct.SameLocally && !acct.RequireTLS
	sess.acctHost, sess.byAddr = acct.Host, acct.ByAddr
	sess.db = resp.DB
	_ = nc.SetDeadline(time.Time{})
	sess.cl.Resize(wire.DefaultBufferSize)
	sess.cl.Limit = s.maxAllowedPacket()
	// Open the master connection now so MariaDB judges the login and the
	// database (its errors reach the client unchanged). A read/write split
	// session may log in without a master; its writes will wait or fail.
	werr, err := sess.connectMaster()
	if err != nil {
		return err
	}
	if werr != nil {
		_ = sess.cl.WriteFlush(werr.Packet())
		return werr
	}
	return sess.cl.WriteFlush(wire.OK(0, 0, wire.StatusAutocommit))
}
