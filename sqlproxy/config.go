package sqlproxy

import (
	"fmt"
	"log/slog"
	"net"
	"time"

	"phxgo/internal/addrrate"
)

// Mode is how a listener routes statements.
type Mode uint8

const (
	// Linearizable sends every statement to the master (default port).
	Linearizable Mode = iota
	// RWSplit sends reads outside transactions to healthy replicas (Cetus rules).
	RWSplit
	// Causal is RWSplit where a replica serves a session's read only after
	// it applied that session's last write.
	Causal
)

func (m Mode) String() string {
	switch m {
	case Linearizable:
		return "linearizable"
	case RWSplit:
		return "rwsplit"
	case Causal:
		return "causal"
	}
	return fmt.Sprintf("Mode(%d)", m)
}

// ParseMode parses "linearizable", "rwsplit" or "causal".
func ParseMode(s string) (Mode, error) {
	for _, m := range []Mode{Linearizable, RWSplit, Causal} {
		if m.String() == s {
			return m, nil
		}
	}
	return 0, fmt.Errorf("%w: mode %q (want linearizable, rwsplit or causal)", ErrConfig, s)
}

// Rules decide where statements go; all of them may change at run time
// (Reload) and apply to the next statement routed.
type Rules struct {
	// Hold keeps a backend connection with its client this long after a
	// statement before it may return to the pool (Cetus: 256ms).
	Hold time.Duration
	// MasterWait is how long a statement waits for a master with a valid
	// lease before it fails with ErrNoMaster's MySQL error.
	MasterWait time.Duration
	// ReadMasterPercentage (0..100) of replica-eligible reads go to the master.
	ReadMasterPercentage int
	// MasterPreferred sends everything to the master unless a hint says otherwise.
	MasterPreferred bool
	// MaxReplicaLag: a replica further behind (Seconds_Behind_Master)
	// gets no reads.
	MaxReplicaLag time.Duration
	// MaxReplicaBehind: a replica lacking more transactions than this
	// (its GTID position against the master's binlog position) gets no
	// reads.
	MaxReplicaBehind int64
	// CausalWait bounds MASTER_GTID_WAIT on a replica before the read
	// falls back to the master.
	CausalWait time.Duration
}

// Config of a Server. Start from DefaultConfig.
type Config struct {
	// Rules are the routing settings at start; Reload may replace them
	// (reload.go), so a session reads the running ones (Server.rules).
	Rules
	// SettingsFile, when set, is a JSON file of reloadable settings
	// (routing rules, log_level) laid over Rules and LogLevel at start and
	// at every Reload (settings.go).
	SettingsFile string
	// LogLevel is the level of Logger's handler, so Reload can change
	// it; nil: the level is fixed and a settings file naming one is refused.
	LogLevel *slog.LevelVar
	// HealthInterval between replica checks.
	HealthInterval time.Duration
	// AdminUser/AdminPassword: account for health checks (needs
	// REPLICA MONITOR / SLAVE MONITOR or PROCESS) — never a client account.
	AdminUser, AdminPassword string
	// ServerVersion announced to clients; "5.5.5-" tells MariaDB clients
	// they talk to MariaDB.
	ServerVersion string
	// IdleTimeout closes pooled backend connections idle this long.
	IdleTimeout time.Duration
	// DialTimeout for backend connections.
	DialTimeout time.Duration
	// PeerTimeout bounds how long a silent peer keeps a connection open
	// when a partition drops its packets (no RST): client connections
	// and every backend connection (MariaDB, the master's proxy) get TCP
	// keepalive probes every max(1s, PeerTimeout/5) and TCP_USER_TIMEOUT
	// PeerTimeout, so the kernel fails the connection after about
	// PeerTimeout without an answer. A client's connection with data in
	// flight gets max(PeerTimeout, 60 s) instead: the kernel counts a
	// client that stops reading a big result (zero window) as silent, and
	// MariaDB itself allows net_write_timeout (60 s). 0 keeps the
	// kernel's defaults (minutes). Must be 0 or at least 1s (keepalive
	// has 1 s granularity).
	PeerTimeout time.Duration
	// IdleInTxTimeout: a forwarded session (a hop from another node's
	// proxy) that stays idle inside a transaction this long loses it: its
	// backend connection is closed (MariaDB rolls back and frees the
	// locks) and its next statement gets 1290/40001. Bounds the locks an
	// orphaned transaction of a partitioned node holds on the master. 0
	// disables.
	IdleInTxTimeout time.Duration
	// SourceIP, when set, is the local address of every outgoing
	// connection: backend MariaDBs, the master's proxy, health checks
	// (see DialFrom). nil: the kernel chooses.
	SourceIP net.IP
	// Allow lists the client networks that may connect (ParseAllow;
	// security.go). nil: DefaultAllow (loopback and private ranges).
	Allow []*net.IPNet
	// PeerTLS, when set, wraps the forwarding hop to the master's proxy
	// in mutual TLS and makes this proxy refuse a hop that is not
	// (security.go). nil: hops in the clear.
	// The proxy's gRPC link to binlogd uses it too (TLS.GRPCCredentials);
	// Reload swaps its material.
	PeerTLS *TLS
	// MySQLTLS, when set, wraps every connection to a MariaDB over TCP
	// (session backends, health checks) in TLS verified against its CA
	// and refuses a MariaDB that does not offer TLS (mysqltls.go); this
	// node's MariaDB over MySQLSocket stays plain. nil: plain TCP.
	// cmd/sqlproxy sets it to PeerTLS; Reload swaps the material of both.
	MySQLTLS *TLS
	// MySQLSocket, when set, is the unix socket of this node's own
	// MariaDB: session connections to it (the view's SelfMySQLAddr) use
	// the socket instead of loopback TCP, which costs the kernel less
	// per packet (about 15-20% more point selects direct on the 2-vCPU
	// dev VM). MariaDB then matches accounts as user@localhost, so a
	// session uses the socket only when user@localhost is the very row
	// its client matched (auth.Account.SameLocally); others go by TCP.
	MySQLSocket string
	// DenyUsers are user names the proxy never logs in (guard.go): a
	// name, or a prefix ending in '*'. AdminUser is always denied too.
	// nil: DefaultDenyUsers.
	DenyUsers []string
	// MaxConnections caps client connections (logged in or not); one
	// more gets MariaDB's 1040 "Too many connections" (guard.go).
	MaxConnections int
	// LoginTimeout bounds the handshake and login of a client (MariaDB's
	// connect_timeout): a stranger cannot hold a slot longer.
	LoginTimeout time.Duration
	// MaxAllowedPacket bounds a logged-in client's packet; a longer one
	// gets 1153 and the connection is closed, as MariaDB does. 0: the
	// master's @@global.max_allowed_packet when the authenticator can
	// read it (auth.Store), else DefaultMaxAllowedPacket.
	MaxAllowedPacket int
	// LoginFailureBurst and LoginFailureEvery are each client address's
	// budget of failed logins (addrrate.Failures): after Burst failures
	// an address gets one attempt per Every, and the others are refused
	// with 1129 before the password is checked. Burst 0: no limit.
	LoginFailureBurst int
	LoginFailureEvery time.Duration
	// RefuseDynamicSQL refuses texts that run SQL built or named at run
	// time (classify.Info.Dynamic), where a KILL cannot be seen
	// (dynamic.go).
	RefuseDynamicSQL bool
	// Knobs are test hooks; nil in production.
	Knobs *Knobs

	Logger  *slog.Logger
	Metrics *Metrics // nil: a private registry
	// stmtBudget bounds the prepared statements kept (stmtbudget.go);
	// zero: defaultStmtBudget. Tests lower it.
	stmtBudget stmtBudget
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{
		Rules: Rules{
			Hold:             256 * time.Millisecond,
			MasterWait:       2 * time.Second,
			MaxReplicaLag:    10 * time.Second,
			MaxReplicaBehind: 10000,
			CausalWait:       time.Second,
		},
		HealthInterval:  500 * time.Millisecond,
		ServerVersion:   "5.5.5-10.11.0-MariaDB-phxgo",
		IdleTimeout:     5 * time.Minute,
		DialTimeout:     3 * time.Second,
		PeerTimeout:     5 * time.Second,
		IdleInTxTimeout: 10 * time.Second,
		MaxConnections:  DefaultMaxConnections,
		LoginTimeout:    10 * time.Second,

		LoginFailureBurst: addrrate.DefaultFailureBurst,
		LoginFailureEvery: addrrate.DefaultFailureEvery,
	}
}

// Validate checks the fields; the error names the bad key.
func (c *Config) Validate() error {
	if err := c.Rules.Validate(); err != nil {
		return err
	}
	switch {
	case c.HealthInterval <= 0:
		return fmt.Errorf("%w: health-interval %v must be > 0", ErrConfig, c.HealthInterval)
	case c.ServerVersion == "":
		return fmt.Errorf("%w: server-version is empty", ErrConfig)
	case c.DialTimeout <= 0:
		return fmt.Errorf("%w: dial-timeout %v must be > 0", ErrConfig, c.DialTimeout)
	case c.PeerTimeout < 0 || c.PeerTimeout > 0 && c.PeerTimeout < time.Second:
		return fmt.Errorf("%w: peer-timeout %v must be 0 or at least 1s", ErrConfig, c.PeerTimeout)
	case c.IdleInTxTimeout < 0:
		return fmt.Errorf("%w: idle-in-tx-timeout %v < 0", ErrConfig, c.IdleInTxTimeout)
	case c.MaxConnections <= 0:
		return fmt.Errorf("%w: max-connections %d must be > 0", ErrConfig, c.MaxConnections)
	case c.LoginTimeout <= 0:
		return fmt.Errorf("%w: connect-timeout %v must be > 0", ErrConfig, c.LoginTimeout)
	case c.LoginFailureBurst < 0:
		return fmt.Errorf("%w: login-failure-burst %d must be >= 0 (0: no limit)", ErrConfig, c.LoginFailureBurst)
	case c.LoginFailureBurst > 0 && c.LoginFailureEvery <= 0:
		return fmt.Errorf("%w: login-failure-interval %v must be > 0", ErrConfig, c.LoginFailureEvery)
	case c.MaxAllowedPacket < 0 || c.MaxAllowedPacket > 1<<30:
		return fmt.Errorf("%w: max-allowed-packet %d not in 0..1G", ErrConfig, c.MaxAllowedPacket)
	case c.SourceIP != nil && len(c.SourceIP) != net.IPv4len && len(c.SourceIP) != net.IPv6len:
		return fmt.Errorf("%w: source-ip %v is not an IP address", ErrConfig, c.SourceIP)
	}
	return nil
}

// Validate checks the rules; the error names the bad key (as its flag).
func (r *Rules) Validate() error {
	switch {
	case r.Hold < 0:
		return fmt.Errorf("%w: hold %v < 0", ErrConfig, r.Hold)
	case r.MasterWait < 0:
		return fmt.Errorf("%w: master-wait %v < 0", ErrConfig, r.MasterWait)
	case r.ReadMasterPercentage < 0 || r.ReadMasterPercentage > 100:
		return fmt.Errorf("%w: read-master-percentage %d not in 0..100", ErrConfig, r.ReadMasterPercentage)
	case r.MaxReplicaLag <= 0:
		return fmt.Errorf("%w: max-replica-lag %v must be > 0", ErrConfig, r.MaxReplicaLag)
	case r.CausalWait < 0:
		return fmt.Errorf("%w: causal-wait %v < 0", ErrConfig, r.CausalWait)
	case r.MaxReplicaBehind < 0:
		return fmt.Errorf("%w: max-replica-behind %d < 0", ErrConfig, r.MaxReplicaBehind)
	}
	return nil
}
