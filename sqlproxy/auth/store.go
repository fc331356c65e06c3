package auth

import (
	"context"
	"crypto/tls"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/go-sql-driver/mysql"

	"phxgo/sqlproxy/wire"
)

// Sentinel errors.
var (
	// ErrDenied means the user is unknown, has no row for the client's
	// host, or the token does not match: the client gets MariaDB's
	// "Access denied".
	ErrDenied = errors.New("auth: access denied")
	// ErrUnusable means the account that applies to the client cannot log
	// in through the proxy: another plugin (unix_socket, ed25519, …), an
	// invalid hash, or no password. It wraps ErrDenied.
	ErrUnusable = fmt.Errorf("%w: account has no mysql_native_password hash", ErrDenied)
	// ErrUnavailable means no server could be asked for the user's hash.
	ErrUnavailable = errors.New("auth: credential source unavailable")
)

// DefaultMaxEntries bounds the cache of users looked up (Config.MaxEntries).
const DefaultMaxEntries = 4096

// maxLookupConns bounds the connections a Store keeps open to each
// MariaDB. Every name not in the cache costs a query, so without a bound
// a stranger trying random user names made the proxy open one MariaDB
// connection per attempt: 1,000 attempts a second used up all of
// max_connections (500), and clients reaching MariaDB directly got 1040
// (audit, December 2026). Past the bound, lookups queue for a connection
// within ask's 3 s; cached users do not wait at all.
const maxLookupConns = 4

// Config says how to reach mysql.user.
type Config struct {
	User, Password string // the admin account (SELECT on mysql.user)
	// Addrs returns the MariaDB addresses to read mysql.user from, in
	// order of preference (the master first).
	Addrs func() []string
	// TTL bounds how long a cached hash is used without re-reading
	// (default 10s). A failed check re-reads at most once per MinRefresh
	// (default 500ms), so a new password works at once.
	TTL, MinRefresh time.Duration
	// MaxEntries bounds the users cached (default DefaultMaxEntries), the
	// unknown names strangers try included: when full, expired entries go
	// first, then arbitrary ones.
	MaxEntries int
	// Dial, when set, opens the connections to Addrs (e.g. bound to the
	// node's source address); nil: the driver's default dialer.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// TLS, when set, gives the TLS configuration for the MariaDB at addr
	// (sqlproxy.MySQLClientTLS): the reads then run in TLS, and a MariaDB
	// that does not offer it is not asked. nil: plain TCP.
	TLS func(addr string) *tls.Config
}

// row is one mysql.user row of a user.
type row struct {
	host hostPattern
	hash []byte // SHA1(SHA1(pw)); nil: the row cannot log in through the proxy
	// requireTLS: the account was created or altered with REQUIRE SSL,
	// X509, ISSUER, SUBJECT or CIPHER (ssl_type not empty).
	requireTLS bool
}

type entry struct {
	rows    []row // most specific host first (sortRows); none: unknown user
	fetched time.Time
}

// Store verifies mysql_native_password tokens against the stored hashes.
// It never sees or keeps a password: only SHA1(SHA1(pw)) from the server,
// and it hands the caller SHA1(pw) recovered from a verified token.
type Store struct {
	cfg Config

	mu        sync.Mutex
	cache     map[string]*entry
	dbs       map[string]*sql.DB
	maxPacket int // @@global.max_allowed_packet, read with the users
	packetAt  time.Time
}

// New returns a Store.
func New(cfg Config) *Store {
	if cfg.TTL == 0 {
		cfg.TTL = 10 * time.Second
	}
	if cfg.MinRefresh == 0 {
		cfg.MinRefresh = 500 * time.Millisecond
	}
	if cfg.MaxEntries <= 0 {
		cfg.MaxEntries = DefaultMaxEntries
	}
	return &Store{cfg: cfg, cache: map[string]*entry{}, dbs: map[string]*sql.DB{}}
}

// Account is a verified login.
type Account struct {
	Stage1 []byte // SHA1(password), to answer the backend's challenge
	Host   string // Host of the mysql.user row that applied to the client
	// SameLocally: a login by the unix socket (user@localhost) gets this
	// same row, so MariaDB judges a socket login as the client's own
	// account; otherwise the proxy must not use the socket for this
	// client (it would get user@localhost's privileges).
	SameLocally bool
	// RequireTLS: the row asks for TLS (REQUIRE …). MariaDB sees only the
	// proxy's own link, which may be TLS, so the proxy checks the client's
	// (red-team test, session 37: a plaintext client got in through a
	// proxy whose link to MariaDB was TLS).
	RequireTLS bool
	// ByAddr: the row matches the client's address itself, as MariaDB
	// judges a login by TCP (skip-name-resolve), not only as 'localhost'
	// (a loopback client matching a 'localhost' row). sqlproxy's PROXY
	// header names the address only then, else a local client.
	ByAddr bool
}

// Verify checks the client's token for user, connecting from client,
// against salt. The account is the user's most specific row whose host
// matches the client (host.go). Errors: ErrDenied (ErrUnusable when that
// row has no native hash), ErrUnavailable (wrapped with the cause).
func (s *Store) Verify(ctx context.Context, user string, client Client, salt, token []byte) (Account, error) {
	err := ErrDenied
	for attempt := 0; attempt < 2; attempt++ {
		e, lerr := s.lookup(ctx, user, attempt == 1)
		if lerr != nil {
			return Account{}, lerr
		}
		r, ok := match(e.rows, client)
		switch {
		case !ok:
			err = ErrDenied
		case r.hash == nil:
			err = ErrUnusable
		case len(token) == 0:
			err = ErrDenied // a real hash never matches an empty token
		default:
			if st1, ok := wire.Stage1FromToken(salt, token, r.hash); ok {
				local, _ := match(e.rows, Client{})
				byAddr := client.IP != nil && r.host.matches(Client{IP: client.IP, ByAddr: true})
				return Account{Stage1: st1, Host: r.host.text, SameLocally: local.host.text == r.host.text, RequireTLS: r.requireTLS, ByAddr: byAddr}, nil
			}
			err = ErrDenied
		}
	}
	return Account{}, err
}

// AccountFor is the Host of the row of user that a login from client
// gets, password unchecked; ok false when no row matches. The proxy asks
// it about its own address (Client.ByAddr) before it logs in to a MariaDB
// without a PROXY header (sqlproxy's proxyproto.go). Errors:
// ErrUnavailable (wrapped with the cause).
func (s *Store) AccountFor(ctx context.Context, user string, client Client) (string, bool, error) {
	e, err := s.lookup(ctx, user, false)
	if err != nil {
		return "", false, err
	}
	r, ok := match(e.rows, client)
	return r.host.text, ok, nil
}

func (s *Store) lookup(ctx context.Context, user string, refresh bool) (*entry, error) {
	s.mu.Lock()
	e := s.cache[user]
	s.mu.Unlock()
	now := time.Now()
	if e != nil {
		age := now.Sub(e.fetched)
		if age < s.cfg.TTL && (!refresh || age < s.cfg.MinRefresh) {
			return e, nil
		}
	}
	rows, err := s.fetch(ctx, user)
	if err != nil {
		if e != nil {
			return e, nil // stale beats nothing; MariaDB still checks the backend login
		}
		return nil, err
	}
	e = &entry{rows: rows, fetched: now}
	s.mu.Lock()
	s.put(user, e, now)
	s.mu.Unlock()
	return e, nil
}

// put caches e, first making room when the cache is full: expired
// entries go, then arbitrary ones (map order), so a stranger trying a
// million user names keeps at most MaxEntries. Caller holds mu.
func (s *Store) put(user string, e *entry, now time.Time) {
	if _, ok := s.cache[user]; !ok && len(s.cache) >= s.cfg.MaxEntries {
		for u, old := range s.cache {
			if now.Sub(old.fetched) >= s.cfg.TTL {
				delete(s.cache, u)
			}
		}
		for u := range s.cache {
			if len(s.cache) < s.cfg.MaxEntries {
				break
			}
			delete(s.cache, u)
		}
	}
	s.cache[user] = e
}

// cached reports how many users the cache holds (tests).
func (s *Store) cached() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.cache)
}

func (s *Store) fetch(ctx context.Context, user string) ([]row, error) {
	var rows []row
	err := s.ask(ctx, func(ctx context.Context, db *sql.DB) (err error) {
		rows, err = query(ctx, db, user)
		return err
	})
	return rows, err
}

// ask runs q against each of Addrs in turn, each try bounded by 3 s,
// until one succeeds. Errors: ErrUnavailable, naming the last failure.
func (s *Store) ask(ctx context.Context, q func(context.Context, *sql.DB) error) error {
	var last error = errors.New("no address")
	for _, addr := range s.cfg.Addrs() {
		db, err := s.db(addr)
		if err != nil {
			last = err
			continue
		}
		qctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		err = q(qctx, db)
		cancel()
		if err == nil {
			return nil
		}
		last = fmt.Errorf("%s: %w", addr, err)
	}
	return fmt.Errorf("%w: %v", ErrUnavailable, last)
}

// query reads the user's account rows. Roles (is_role) are not accounts
// (a role's empty password must not make its name a passwordless user),
// and User is compared exactly in Go: the column's collation pads, so
// "root " = "root" in SQL.
//
// ssl_type (REQUIRE …) needs the column grant that binlogd gives
// sqlproxy's account since session 37 (binlogd/mysqld: proxyColumns, at
// every start). A server whose binlogd is older, in a rolling upgrade,
// refuses the column: the rows are then read without it and each one
// requires TLS (closed by default: only clients over TLS get in through
// that server until its binlogd runs the new version).
func query(ctx context.Context, db *sql.DB, user string) ([]row, error) {
	const q = "SELECT User, Host, plugin, authentication_string, %s FROM mysql.user WHERE User = ? AND is_role = 'N'"
	rs, err := db.QueryContext(ctx, fmt.Sprintf(q, "ssl_type"), user)
	if isColumnRefused(err) {
		rs, err = db.QueryContext(ctx, fmt.Sprintf(q, "'unknown: no grant on ssl_type'"), user)
	}
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	var out []row
	for rs.Next() {
		var u, host, plugin, as, ssl string
		if err := rs.Scan(&u, &host, &plugin, &as, &ssl); err != nil {
			return nil, err
		}
		if u != user {
			continue
		}
		r := row{host: parseHost(host), requireTLS: ssl != ""}
		if h, ok := parseNative(plugin, as); ok {
			r.hash = h
		}
		out = append(out, r)
	}
	if err := rs.Err(); err != nil {
		return nil, err
	}
	sortRows(out)
	return out, nil
}

// parseNative decodes "*HEX" of a mysql_native_password row. An empty
// string (no password), any other plugin and anything not 41 characters
// of "*HEX" (e.g. 'invalid') are refused: the proxy logs in nobody
// without a real password.
func parseNative(plugin, as string) ([]byte, bool) {
	if plugin != "" && plugin != wire.NativePlugin {
		return nil, false
	}
	if len(as) != 41 || as[0] != '*' {
		return nil, false
	}
	h, err := hex.DecodeString(strings.ToLower(as[1:]))
	return h, err == nil
}

// MaxAllowedPacket returns the master's @@global.max_allowed_packet
// (the first of Addrs that answers), cached for TTL. Errors:
// ErrUnavailable.
func (s *Store) MaxAllowedPacket(ctx context.Context) (int, error) {
	s.mu.Lock()
	n, at := s.maxPacket, s.packetAt
	s.mu.Unlock()
	if n > 0 && time.Since(at) < s.cfg.TTL {
		return n, nil
	}
	var fresh int
	err := s.ask(ctx, func(ctx context.Context, db *sql.DB) error {
		if err := db.QueryRowContext(ctx, "SELECT @@global.max_allowed_packet").Scan(&fresh); err != nil {
			return err
		}
		if fresh <= 0 {
			return fmt.Errorf("max_allowed_packet is %d", fresh)
		}
		return nil
	})
	if err == nil {
		s.mu.Lock()
		s.maxPacket, s.packetAt = fresh, time.Now()
		s.mu.Unlock()
		return fresh, nil
	}
	if n > 0 {
		return n, nil // stale beats nothing
	}
	return 0, err
}

func (s *Store) db(addr string) (*sql.DB, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if db := s.dbs[addr]; db != nil {
		return db, nil
	}
	cfg := mysql.NewConfig()
	cfg.User, cfg.Passwd, cfg.Net, cfg.Addr = s.cfg.User, s.cfg.Password, "tcp", addr
	cfg.Timeout = 2 * time.Second
	cfg.ReadTimeout = 5 * time.Second
	cfg.DialFunc = s.cfg.Dial
	if s.cfg.TLS != nil {
		cfg.TLS = s.cfg.TLS(addr)
	}
	c, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, err
	}
	db := sql.OpenDB(c)
	db.SetMaxOpenConns(maxLookupConns)
	db.SetMaxIdleConns(1)
	db.SetConnMaxIdleTime(time.Minute)
	s.dbs[addr] = db
	return db, nil
}

// Close releases the admin connections.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for a, db := range s.dbs {
		_ = db.Close()
		delete(s.dbs, a)
	}
	return nil
}

// isColumnRefused: MariaDB refused a column of the query, for want of a
// grant on it (1143) or because it has no such column (1054).
func isColumnRefused(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && (me.Number == 1143 || me.Number == 1054)
}
