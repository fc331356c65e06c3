package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"time"

	"phxgo/binlogd/mysqld"
)

// ErrInvalid wraps every validation error.
var ErrInvalid = errors.New("invalid config")

// The defaults of the duration keys that have one; they fill an absent
// key only (Duration).
const (
	DefaultLeaseDuration = 5 * time.Second
	DefaultDriftMargin   = 500 * time.Millisecond
	DefaultLogRetention  = 24 * time.Hour
)

// Member is one node of the cluster as every node knows it: only the
// addresses OTHER nodes dial, as advertised to them (addrs.go). What a
// node listens on is its own top-level keys.
type Member struct {
	ID        uint32 `json:"id"`
	GRPCAddr  string `json:"grpc_addr"`  // binlogd peer + admin gRPC, as peers dial it
	MySQLAddr string `json:"mysql_addr"` // the node's MariaDB, as the other nodes' proxies dial it
	ProxyAddr string `json:"proxy_addr"` // sqlproxy's linearizable port, as the other proxies dial it ("" if none)
	// LegacyReplAddr is the obsolete members[].repl_addr of files (and
	// membership entries in the log) written before the split; Load moves
	// this node's to Config.ReplAddr and clears the rest.
	LegacyReplAddr string `json:"repl_addr,omitempty"`
	// Witness: a voter that runs binlogd only (witness.go): it stores and
	// votes on the log, has no MariaDB (mysql_addr and proxy_addr empty)
	// and is never master. It travels with the member through the log
	// (the membership entry's Info), so every node knows.
	Witness bool `json:"witness,omitempty"`
	// Learner: a data node that follows the log and serves reads but never
	// votes and is never master (learner.go). For the initial members the
	// config says so; afterwards the log does (binlogd members promote and
	// demote flip it), and the log's flag wins over the entry's.
	Learner bool `json:"learner,omitempty"`
}

// Duration is a time.Duration written as "5s" in JSON. It records
// whether a file gave it, so that a default fills only an absent key:
// an explicit "0s" stays 0 and means what the key documents for 0, or
// is refused by Validate; it never silently becomes the default. Keys of
// this type that have a default are tagged omitzero, so Save writes
// an unset one as absent and an explicit "0s" as "0s".
type Duration struct {
	time.Duration
	set bool // UnmarshalJSON ran: the key was in the file
}

func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// UnmarshalJSON parses "5s". A bad duration is a *json.UnmarshalTypeError,
// so that encoding/json adds the key it came from (Load words it
// `key "lease_duration": ...`).
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return &json.UnmarshalTypeError{Value: fmt.Sprintf("%q is not a duration such as \"5s\" or \"1h30m\" (%v)", s, err), Type: durationType}
	}
	d.Duration, d.set = v, true
	return nil
}

// unset: no file gave d and nothing set it (the zero value): a default
// may fill it.
func (d Duration) unset() bool { return !d.set && d.Duration == 0 }

// Config is binlogd's config file.
type Config struct {
	// id: this node's id, one of members[].id.
	ID uint32 `json:"id"`
	// dir: binlogd's own state (Paxos log in dir/paxos). Relative paths are
	// relative to the config file.
	Dir string `json:"dir"`
	// members: the cluster's initial members, including this one (written
	// by `binlogd init`). Once the log holds membership changes the log
	// governs (`binlogd members`); these only seed it.
	Members []Member `json:"members"`
	// grpc_listen: where this node's gRPC server listens (default: its
	// members[].grpc_addr). Set it when that advertised address is not
	// this host's own (NAT, containers): e.g. "0.0.0.0:17011".
	GRPCListen string `json:"grpc_listen,omitempty"`
	// mysql_listen: MariaDB's bind-address and port (default: its
	// members[].mysql_addr); binlogd's capture dials it (a wildcard host
	// as loopback).
	MySQLListen string `json:"mysql_listen,omitempty"`
	// repl_addr: this node's replication endpoint, which only its own
	// MariaDB pulls from (default 127.0.0.1:17012); loopback unless
	// allow_remote_repl. No other node uses it, so it is not in members.
	ReplAddr string `json:"repl_addr,omitempty"`
	// join: this node joins a running cluster (`binlogd members add`):
	// members lists the current members and this node; binlogd learns the
	// members from them and votes once the change that adds it is active.
	Join bool `json:"join,omitempty"`
	// mysql_dir: the MariaDB instance root (datadir in mysql_dir/data).
	MySQLDir string `json:"mysql_dir"`
	// supervise_mysql: binlogd starts mariadbd (after recovery) and
	// restarts it when it dies.
	SuperviseMySQL bool `json:"supervise_mysql"`
	// credentials_file: JSON with capture_user, capture_password,
	// app_user, app_password; must be mode 0600.
	CredentialsFile string `json:"credentials_file"`
	// lease_duration, drift_margin: master lease timing (default 5s, 500ms).
	// An explicit "0s" is refused (Validate), not taken for the default.
	LeaseDuration Duration `json:"lease_duration,omitzero"`
	DriftMargin   Duration `json:"drift_margin,omitzero"`
	// http_addr: Prometheus /metrics and health; "" off; an empty host
	// (":9100") means loopback.
	HTTPAddr string `json:"http_addr"`
	// pprof: also serve Go's profiler at /debug/pprof/ on http_addr
	// (default false).
	Pprof bool `json:"pprof"`
	// paxos_thrifty: the Paxos leader asks only a majority to vote on each
	// value; the other members store it without a disk sync of their own
	// (default true; see paxos.Config.Thrifty).
	PaxosThrifty *bool `json:"paxos_thrifty,omitempty"`
	// wal_io_uring: the Paxos log flushes its writes through io_uring
	// where the kernel offers it (default true; it falls back to the
	// fdatasync system call by itself where not). false: always the
	// system call. See wal.Options.PlainSync.
	WALIOURing *bool `json:"wal_io_uring,omitempty"`
	// log_retention: keep Paxos log entries at least this long after they
	// were applied, and until every member's MariaDB applied them
	// (default 24h; an explicit "0s" is refused, not taken for the
	// default). See README "Log retention".
	LogRetention Duration `json:"log_retention,omitzero"`
	// log_retention_bytes: when the stored log exceeds this, compact past
	// lagging members (oldest first, never past this node's MariaDB);
	// default 1 GiB (an absent key or 0), min 64 KiB.
	LogRetentionBytes int64 `json:"log_retention_bytes"`
	// group_commit_wait: while master, binlogd sets MariaDB's
	// binlog_commit_wait_count to the size the commit groups reach and
	// binlog_commit_wait_usec to 1.5x the mean semi-sync ACK time (at
	// least 200µs, at most this), so more transactions share each Paxos round
	// (binlogd/node/groupwait.go); "0s" leaves both variables alone
	// (default 10ms, at most 100ms).
	GroupCommitWait *Duration `json:"group_commit_wait,omitempty"`
	// replica_apply_threads: as a replica, the node's MariaDB applies the
	// log with this many parallel workers (slave_parallel_threads,
	// optimistic mode: transactions run in parallel and commit in log
	// order); 0: one SQL thread. Default DefaultReplicaApplyThreads.
	ReplicaApplyThreads *int `json:"replica_apply_threads,omitempty"`
	// mysql_extra: extra my.cnf lines for the node's MariaDB.
	MySQLExtra []string `json:"mysql_extra,omitempty"`
	// cpu_nice, mysql_nice: see Priority (priority.go).
	Priority
	// base_gtid: the GTID a cluster rebuilt from a backup starts its log's
	// chain at (`binlogd restore -new-cluster` writes it; every member
	// must have the same; masterlease.Lease.SetBase). "" for a cluster
	// that started empty.
	BaseGTID string `json:"base_gtid,omitempty"`
	// event_hook, event_hook_timeout: see Events (events.go).
	Events
	// tls_cert, tls_key, tls_ca, allow_remote_repl: see Security.
	Security

	path     string
	warnings []string // what Load changed in an old-style file (addrs.go)
}

// Credentials are the MySQL secrets binlogd uses.
type Credentials struct {
	CaptureUser     string `json:"capture_user"`
	CapturePassword string `json:"capture_password"`
	AppUser         string `json:"app_user"`
	AppPassword     string `json:"app_password"`
	// proxy_user/proxy_password: sqlproxy's admin account (reads
	// mysql.user, checks replicas). Optional.
	ProxyUser     string `json:"proxy_user,omitempty"`
	ProxyPassword string `json:"proxy_password,omitempty"`
	// repl_user/repl_password: the outside replicas' account on the
	// replication endpoint (README "Outside replicas"). It is binlogd's
	// own, not a MariaDB account, and may only dump the log. Optional
	// (both or neither; empty: no outside replicas); `binlogd init` and
	// `make cluster` generate it.
	ReplUser     string `json:"repl_user,omitempty"`
	ReplPassword string `json:"repl_password,omitempty"`
	// app_databases: the databases app_user may use, as GRANT patterns
	// ('%' any string, '_' any character, '\' escapes; in JSON "app\\_%"
	// is app_ followed by anything). app_user gets DML and DDL there and
	// nothing else; a pattern matching mysql, sys, performance_schema or
	// information_schema is refused. Default: mysqld.DefaultAppDatabases
	// (app, app_*, sbtest, jepsen, hostsapp, e2e, hostile, big, tlsdb,
	// stmtdb, test, test_*).
	AppDatabases []string `json:"app_databases,omitempty"`
}

// DefaultGroupCommitWait is group_commit_wait's default.
const DefaultGroupCommitWait = 10 * time.Millisecond

// GroupCommitWaitOrDefault is group_commit_wait, DefaultGroupCommitWait
// when unset; 0 means binlogd leaves the group commit settings alone.
func (c *Config) GroupCommitWaitOrDefault() time.Duration {
	if c.GroupCommitWait == nil {
		return DefaultGroupCommitWait
	}
	return c.GroupCommitWait.Duration
}

// DefaultReplicaApplyThreads is replica_apply_threads' default. A relaxed
// replica (sync_binlog=0, innodb_flush_log_at_trx_commit=2) waits on no
// fsync, so its apply rate is CPU and row locks, and workers overlap
// them. Measured on one 2-core host with all three nodes (issue 19;
// README "Replica apply"): one SQL thread cost the MariaDB servers 0.87x
// the CPU per transaction of four workers at 16 sysbench threads, but at
// 64 it fell 0.8-2.5 s behind a 20 s burst, where four workers were
// caught up at its end; two workers cost 1.12x the CPU of four at 64.
// One thread suits a host short of cores whose master writes little.
const DefaultReplicaApplyThreads = 4

// ReplicaApplyThreadsOrDefault is replica_apply_threads, or
// DefaultReplicaApplyThreads when unset.
func (c *Config) ReplicaApplyThreadsOrDefault() int {
	if c.ReplicaApplyThreads == nil {
		return DefaultReplicaApplyThreads
	}
	return *c.ReplicaApplyThreads
}

// Thrifty reports paxos_thrifty, true unless set false.
func (c *Config) Thrifty() bool { return c.PaxosThrifty == nil || *c.PaxosThrifty }

// UseIOURing reports wal_io_uring, true unless set false.
func (c *Config) UseIOURing() bool { return c.WALIOURing == nil || *c.WALIOURing }

// Load reads, defaults and validates a config file.
func Load(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var c Config
	if err := decodeStrict(b, &c); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrInvalid, path, err)
	}
	c.path = path
	c.migrateAddrs()
	c.setDefaults()
	c.resolve(filepath.Dir(path))
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return &c, nil
}

// Save writes c as indented JSON.
func (c *Config) Save(path string) error {
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// SetDefaults fills unset keys with their defaults (Load does it).
func (c *Config) SetDefaults() { c.setDefaults() }

func (c *Config) setDefaults() {
	// An absent key, not an explicit "0s" (Duration.set): Validate
	// refuses that with the key's name.
	if c.LeaseDuration.unset() {
		c.LeaseDuration.Duration = DefaultLeaseDuration
	}
	if c.LogRetention.unset() {
		c.LogRetention.Duration = DefaultLogRetention
	}
	if c.LogRetentionBytes == 0 {
		c.LogRetentionBytes = 1 << 30
	}
	if c.DriftMargin.unset() {
		c.DriftMargin.Duration = DefaultDriftMargin
	}
	c.setAddrDefaults()
}

func (c *Config) resolve(base string) {
	abs := func(p string) string {
		if p == "" || filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(base, p)
	}
	c.Dir, c.MySQLDir, c.CredentialsFile = abs(c.Dir), abs(c.MySQLDir), abs(c.CredentialsFile)
	c.resolveSecurity(abs)
}

func (c *Config) bad(key, format string, args ...any) error {
	where := c.path
	if where == "" {
		where = "config"
	}
	return fmt.Errorf("%w: %s: key %q: %s", ErrInvalid, where, key, fmt.Sprintf(format, args...))
}

// Validate checks every key and their relations.
func (c *Config) Validate() error {
	if c.ID == 0 {
		return c.bad("id", "must be > 0")
	}
	if c.Dir == "" {
		return c.bad("dir", "required")
	}
	if c.MySQLDir == "" && !c.IsWitness() {
		return c.bad("mysql_dir", "required")
	}
	if c.CredentialsFile == "" && !c.IsWitness() {
		return c.bad("credentials_file", "required")
	}
	if len(c.Members) == 0 {
		return c.bad("members", "required")
	}
	if err := c.validateAddrs(); err != nil {
		return err
	}
	if err := c.validateWitness(); err != nil {
		return err
	}
	if err := c.validateLearners(); err != nil {
		return err
	}
	if v := c.voters(); v%2 == 0 && !c.Join {
		return c.bad("members", "%d voting members: use an odd number (an even one tolerates no more failures and splits votes; learners do not count)", v)
	}
	if c.LeaseDuration.Duration < 500*time.Millisecond {
		return c.bad("lease_duration", "%v is too short (min 500ms; omit the key for the default %v)", c.LeaseDuration.Duration, DefaultLeaseDuration)
	}
	if w := c.GroupCommitWaitOrDefault(); w != 0 && (w < time.Microsecond || w > 100*time.Millisecond) {
		return c.bad("group_commit_wait", "%v must be 0s (off) or between 1µs and 100ms", w)
	}
	if err := c.checkPriority(); err != nil {
		return err
	}
	if n := c.ReplicaApplyThreadsOrDefault(); n < 0 || n > 256 {
		return c.bad("replica_apply_threads", "%d must be between 0 (one SQL thread) and 256", n)
	}
	if c.LogRetention.Duration <= 0 {
		return c.bad("log_retention", "%v must be > 0: how long applied entries are kept at least (omit the key for the default %v)", c.LogRetention.Duration, DefaultLogRetention)
	}
	if c.LogRetentionBytes < 64<<10 {
		return c.bad("log_retention_bytes", "%d is too small (min 65536, 64 KiB)", c.LogRetentionBytes)
	}
	if c.DriftMargin.Duration <= 0 || c.DriftMargin.Duration*2 >= c.LeaseDuration.Duration {
		return c.bad("drift_margin", "%v must be > 0 (clocks drift) and under half of lease_duration %v (omit the key for the default %v)", c.DriftMargin.Duration, c.LeaseDuration.Duration, DefaultDriftMargin)
	}
	if c.BaseGTID != "" && !baseGTID.MatchString(c.BaseGTID) {
		return c.bad("base_gtid", "%q is not one GTID domain-server-seq (e.g. 0-1-1234)", c.BaseGTID)
	}
	if err := c.validateSecurity(); err != nil {
		return err
	}
	if err := c.validateEvents(); err != nil {
		return err
	}
	return nil
}

var baseGTID = regexp.MustCompile(`^\d+-\d+-[1-9]\d*$`)

// Self is this node's member entry.
func (c *Config) Self() Member {
	for _, m := range c.Members {
		if m.ID == c.ID {
			return m
		}
	}
	return Member{}
}

// Peers maps member id to gRPC address.
func (c *Config) Peers() map[uint32]string {
	out := map[uint32]string{}
	for _, m := range c.Members {
		out[m.ID] = m.GRPCAddr
	}
	return out
}

// SortedMembers returns members by id.
func (c *Config) SortedMembers() []Member {
	out := append([]Member(nil), c.Members...)
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// LoadCredentials reads the config's credentials file as binlogd does
// at start: refusing one that group or others may access, or that
// another user than the one binlogd runs as (or root) owns
// (secretfile.go).
func (c *Config) LoadCredentials() (Credentials, error) {
	return loadCredentials(c.CredentialsFile, os.Geteuid())
}

// LoadCredentials reads a credentials file (no group or other permission
// bits allowed; any owner: `binlogd init -credentials` reads an
// operator's file).
func LoadCredentials(path string) (Credentials, error) {
	return loadCredentials(path, anyOwner)
}

// loadCredentials reads path for a process running as euid (anyOwner:
// no owner check).
func loadCredentials(path string, euid int) (Credentials, error) {
	var cr Credentials
	b, err := readSecretFile("credentials_file", path, euid)
	if err != nil {
		return cr, err
	}
	if err := decodeStrict(b, &cr); err != nil {
		return cr, fmt.Errorf("%w: %s: %v", ErrInvalid, path, err)
	}
	for k, v := range map[string]string{"capture_user": cr.CaptureUser, "capture_password": cr.CapturePassword, "app_user": cr.AppUser, "app_password": cr.AppPassword} {
		if v == "" {
			return cr, fmt.Errorf("%w: %s: key %q is required", ErrInvalid, path, k)
		}
	}
	if err := mysqld.ValidateAppDatabases(cr.AppDatabases); err != nil {
		return cr, fmt.Errorf("%w: %s: key \"app_databases\": %v", ErrInvalid, path, err)
	}
	if err := cr.validateRepl(); err != nil {
		return cr, fmt.Errorf("%w: %s: %v", ErrInvalid, path, err)
	}
	return cr, nil
}

// SaveCredentials writes a credentials file with mode 0600, owned by the
// caller, replacing any file there (its mode and owner too).
func SaveCredentials(path string, cr Credentials) error {
	b, err := json.MarshalIndent(cr, "", "  ")
	if err != nil {
		return err
	}
	return writeSecretFile(path, append(b, '\n'))
}
