package replserver

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/server"

	"phxgo/internal/addrrate"
	"phxgo/internal/ratelog"
	"phxgo/sqlproxy/wire"
)

// Config configures the endpoint. Use DefaultConfig and set the fields.
type Config struct {
	// Addr is where Listen binds, e.g. "127.0.0.1:3307" (Serve takes any
	// listener and ignores it).
	Addr string
	// User and Password are the node's account: its own MariaDB
	// replicates with it (mysql_native_password, with or without TLS).
	User, Password string
	// ReplUser and ReplPassword are the outside replicas' account ("": no
	// such account): it may only dump the log (outside.go), from a
	// server_id of at least MinOutsideServerID, over TLS when TLS is set.
	ReplUser, ReplPassword string
	// TLS, when set, is offered to every client (CLIENT_SSL); the outside
	// account must use it. nil: plain connections only (a node run with
	// insecure_no_tls).
	TLS *tls.Config
	// ServerID is the endpoint's server_id, reported to replicas. It must
	// differ from every replica's server_id.
	ServerID uint32
	// Domain is the GTID domain reported as @@gtid_domain_id.
	Domain uint32
	// HeartbeatPeriod is the longest idle gap on a dump connection: the
	// endpoint sends a heartbeat event when nothing else was sent for
	// min(HeartbeatPeriod, the replica's MASTER_HEARTBEAT_PERIOD).
	HeartbeatPeriod time.Duration
	// WriteTimeout bounds one packet write to a replica; a replica that
	// stops reading for longer is disconnected.
	WriteTimeout time.Duration
	// MaxConns caps the connections open at once (0: DefaultMaxConns).
	// Only the node's own MariaDB needs the endpoint; a local process
	// holding sockets open must not take binlogd to its file limit.
	MaxConns int
	// MaxPending caps the connections not logged in yet, on their own
	// (0: DefaultMaxPending; wire.Acceptor.MaxPending).
	MaxPending int
	// LoginFailureBurst and LoginFailureEvery are each source address's
	// budget of failed logins (addrrate.Failures; loginbudget.go): 0
	// means the defaults, DefaultFailureBurst and DefaultFailureEvery; a
	// negative burst, no limit.
	LoginFailureBurst int
	LoginFailureEvery time.Duration
	Logger            *slog.Logger
}

// DefaultMaxConns is MaxConns when unset: one MariaDB replica reconnecting
// and operators' tools need a handful.
const DefaultMaxConns = 64

// nodeReserve are the logged-in connections outside replicas never take:
// the node's own MariaDB (one replica connection, reconnecting) and
// operators' tools on the node. Outside replicas hold at most MaxConns
// less these, so a credential handed out of the cluster cannot cut the
// node's MariaDB off its log (third red-team pass, session 37: 70
// outside dumps took every slot, and the node's replica got 1040).
const nodeReserve = 8

// DefaultMaxPending is MaxPending when unset. A stranger's connection
// before login holds a goroutine and small buffers (the pre-login guard
// bounds a packet to 64 KiB); 1,024 of them make a flood that evicts a
// 60 ms TLS login need 17,000 connections a second.
const DefaultMaxPending = 1024

// DefaultConfig returns defaults; set User, Password and ServerID.
func DefaultConfig() Config {
	return Config{Addr: "127.0.0.1:0", HeartbeatPeriod: 2 * time.Second, WriteTimeout: time.Minute}
}

// Validate checks the config; the error names the bad field.
func (c Config) Validate() error {
	switch {
	case c.User == "":
		return fmt.Errorf("%w: User is empty", ErrBadConfig)
	case c.ReplUser != "" && c.ReplPassword == "":
		return fmt.Errorf("%w: ReplPassword is empty (ReplUser %q)", ErrBadConfig, c.ReplUser)
	case c.ReplUser != "" && c.ReplUser == c.User:
		return fmt.Errorf("%w: ReplUser %q is also User: the outside account needs a name of its own", ErrBadConfig, c.ReplUser)
	case c.ServerID == 0:
		return fmt.Errorf("%w: ServerID must be > 0", ErrBadConfig)
	case c.HeartbeatPeriod <= 0:
		return fmt.Errorf("%w: HeartbeatPeriod must be > 0", ErrBadConfig)
	case c.WriteTimeout <= 0:
		return fmt.Errorf("%w: WriteTimeout must be > 0", ErrBadConfig)
	case c.LoginFailureEvery < 0:
		return fmt.Errorf("%w: LoginFailureEvery must be >= 0", ErrBadConfig)
	}
	return nil
}

// handshakeVersion is the version in the initial handshake. MariaDB 10.x
// servers prefix "5.5.5-" for old clients; MariaDB's own client strips it.
const handshakeVersion = "5.5.5-" + fdeServerVersion

// defaultRotateAt is the virtual binlog file size after which a dump
// rotates to the next file name. Every dump connection starts afresh at
// phxgo-bin.000001 position 4: in GTID mode positions are only display.
// Each dump numbers its files from phxgo-bin.000001.
const defaultRotateAt = 1 << 30

// Timeouts of the command phase (before COM_BINLOG_DUMP).
const (
	handshakeTimeout = 10 * time.Second
	// handshakeLogEvery spaces the log lines of failed handshakes: a
	// stranger's flood wrote one per connection (audit, December 2026:
	// 1.2 MB in 5 s).
	handshakeLogEvery = 10 * time.Second
	commandTimeout    = 5 * time.Minute
)

// Server is the replication-master endpoint.
type Server struct {
	cfg Config
	// refusedLog is when a refusal over MaxConns was last logged (unix ns).
	refusedLog atomic.Int64
	src        Source
	log        *slog.Logger
	mysql      *server.Server
	accounts   *accounts
	sysvars    map[string]string

	acc wire.Acceptor // connections, at most MaxConns
	// outside counts the outside replicas' logged-in connections
	// (nodeReserve).
	outside atomic.Int32
	// handshakeLog: failed handshakes (strangers' included) are logged
	// once per handshakeLogEvery (package ratelog).
	handshakeLog ratelog.Limiter
	// fails: each source address's budget of failed logins
	// (loginbudget.go).
	fails *addrrate.Failures
	// budgetLoopback: loopback spends and is blocked too (tests only).
	budgetLoopback atomic.Bool
	// listenIP: the host of Config.Addr, never blocked (loginbudget.go).
	listenIP netip.Addr
	// outsideLog: the outside replicas' command-phase lines (refusals,
	// unknown queries, registrations), each kind once per
	// handshakeLogEvery (conn.go: outsideLine): message → *ratelog.Limiter.
	outsideLog sync.Map

	mu     sync.Mutex
	ln     net.Listener
	closed bool
	dumps  map[uint32]*dumpHandle // by replica server_id

	rotateAt uint32 // virtual file size that triggers a rotate (tests lower it)

	// Stats, for tests and metrics.
	statMu sync.Mutex
	stats  Stats
}

// Stats counts what the endpoint did since New.
type Stats struct {
	Connections  int   // accepted connections that passed authentication
	Outside      int   // of those, the outside replicas' account's
	Dumps        int   // COM_BINLOG_DUMP streams started
	Refused      int   // dumps answered with error 1236
	Denied       int   // outside-account queries and commands refused (1227)
	Transactions int64 // transactions sent
	Bytes        int64 // event bytes sent
	Heartbeats   int64
}

type dumpHandle struct {
	cancel context.CancelFunc
	nc     net.Conn // closed to end a dump blocked writing to a dead peer
	done   chan struct{}
}

// New validates cfg and returns a server over src.
func New(cfg Config, src Source) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if src == nil {
		return nil, fmt.Errorf("%w: nil Source", ErrBadConfig)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	s := &Server{
		handshakeLog: ratelog.Limiter{Every: handshakeLogEvery},
		cfg:          cfg,
		src:          guidedSource{src},
		log:          cfg.Logger.With("component", "replserver"),
		mysql:        server.NewServer(handshakeVersion, mysql.DEFAULT_COLLATION_ID, mysql.AUTH_NATIVE_PASSWORD, nil, cfg.TLS),
		accounts:     newAccounts(cfg),
		dumps:        map[uint32]*dumpHandle{},

		rotateAt: defaultRotateAt,
	}
	s.fails = loginFailures(cfg)
	s.accounts.failed = func(a net.Addr) { s.fails.Failed(s.budgetAddr(a), "", time.Now()) }
	if ap, err := netip.ParseAddrPort(cfg.Addr); err == nil {
		s.listenIP = ap.Addr().Unmap()
	}
	s.acc.Max = cfg.MaxConns
	if s.acc.Max <= 0 {
		s.acc.Max = DefaultMaxConns
	}
	s.acc.MaxPending = cfg.MaxPending
	if s.acc.MaxPending <= 0 {
		s.acc.MaxPending = DefaultMaxPending
	}
	s.acc.Refuse = s.refuseTooMany
	s.sysvars = map[string]string{
		"server_id":                    strconv.FormatUint(uint64(cfg.ServerID), 10),
		"version":                      fdeServerVersion,
		"version_comment":              "phxgo binlogd replication endpoint",
		"gtid_domain_id":               strconv.FormatUint(uint64(cfg.Domain), 10),
		"binlog_checksum":              "CRC32",
		"master_verify_checksum":       "OFF",
		"log_bin":                      "ON",
		"binlog_format":                "ROW",
		"gtid_strict_mode":             "ON",
		"max_allowed_packet":           "1073741824",
		"time_zone":                    "SYSTEM",
		"system_time_zone":             "UTC",
		"collation_server":             "utf8mb4_general_ci",
		"character_set_server":         "utf8mb4",
		"read_only":                    "ON",
		"rpl_semi_sync_master_enabled": "OFF",
		"lower_case_table_names":       "0",
	}
	return s, nil
}

// Listen binds cfg.Addr and serves on it in a goroutine; Addr reports the
// bound address. It is a convenience over Serve.
func (s *Server) Listen() error {
	l, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("replserver: listen %s: %w", s.cfg.Addr, err)
	}
	s.mu.Lock()
	s.ln = l
	s.mu.Unlock()
	go func() { _ = s.Serve(l) }()
	return nil
}

// Addr is the listener's address, or cfg.Addr before Serve.
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln != nil {
		return s.ln.Addr().String()
	}
	return s.cfg.Addr
}

// Stats returns a snapshot of the counters.
func (s *Server) Stats() Stats {
	s.statMu.Lock()
	defer s.statMu.Unlock()
	return s.stats
}

func (s *Server) count(f func(*Stats)) {
	s.statMu.Lock()
	f(&s.stats)
	s.statMu.Unlock()
}

// Serve accepts replicas on l until Close; it returns ErrServerClosed then,
// or the accept error. Serve owns l and closes it.
func (s *Server) Serve(l net.Listener) error {
	s.mu.Lock()
	closed := s.closed
	if !closed {
		s.ln = l
	}
	s.mu.Unlock()
	if closed {
		l.Close()
		return ErrServerClosed
	}
	err := s.acc.Serve(l, s.handle)
	if errors.Is(err, wire.ErrClosed) {
		l.Close()
		return ErrServerClosed
	}
	return fmt.Errorf("replserver: accept: %w", err)
}

// Close stops accepting, closes every connection and waits for their
// goroutines.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	for _, d := range s.dumps {
		d.cancel()
	}
	s.mu.Unlock()
	return s.acc.Close()
}

// claimDump registers a dump for a replica server_id. Like MariaDB, a new
// dump from a server_id that already has one ends the old one (the replica
// reconnected; the old socket may be half-open).
func (s *Server) claimDump(serverID uint32, nc net.Conn, cancel context.CancelFunc) (*dumpHandle, error) {
	h := &dumpHandle{cancel: cancel, nc: nc, done: make(chan struct{})}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, ErrServerClosed
	}
	old := s.dumps[serverID]
	s.dumps[serverID] = h
	s.mu.Unlock()
	if old != nil {
		s.log.Info("replica reconnected; ending its previous dump", "replica_server_id", serverID)
		old.cancel()
		old.nc.Close()
		<-old.done
	}
	return h, nil
}

func (s *Server) releaseDump(serverID uint32, h *dumpHandle) {
	s.mu.Lock()
	if s.dumps[serverID] == h {
		delete(s.dumps, serverID)
	}
	s.mu.Unlock()
	close(h.done)
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// refuseTooMany answers a connection over the cap with MariaDB's own
// ERR 1040 in place of the greeting, and closes it; logged at most every
// 10 s (a flood must not flood the log too).
func (s *Server) refuseTooMany(c net.Conn) {
	tooMany := &wire.Error{Code: 1040, SQLState: "08004", Message: "Too many connections"}
	pkt := wire.AppendPacket(nil, 0, tooMany.Packet())
	_ = c.SetWriteDeadline(time.Now().Add(time.Second))
	_, _ = c.Write(pkt)
	c.Close()
	now := time.Now().UnixNano()
	if last := s.refusedLog.Load(); now-last > int64(10*time.Second) && s.refusedLog.CompareAndSwap(last, now) && s.cfg.Logger != nil {
		s.cfg.Logger.Warn("replication endpoint refuses connections: too many open", "remote", c.RemoteAddr().String(), "max", s.acc.Max)
	}
}

// maxOutside is how many logged-in connections the outside account may
// hold: MaxConns less nodeReserve, at least one.
func (s *Server) maxOutside() int32 { return int32(max(s.acc.Max-nodeReserve, 1)) }
