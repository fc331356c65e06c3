package auth

import (
	"context"
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
	// ErrDenied means the user is unknown, uses another plugin, or the
	// token does not match: the client gets MariaDB's "Access denied".
	ErrDenied = errors.New("auth: access denied")
	// ErrUnavailable means no server could be asked for the user's hash.
	ErrUnavailable = errors.New("auth: credential source unavailable")
)

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
	// Dial, when set, opens the connections to Addrs (e.g. bound to the
	// node's source address); nil: the driver's default dialer.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

type entry struct {
	hashes  [][]byte // SHA1(SHA1(pw)) per host row; nil slice entry = empty password
	fetched time.Time
}

// Store verifies mysql_native_password tokens against the stored hashes.
// It never sees or keeps a password: only SHA1(SHA1(pw)) from the server,
// and it hands the caller SHA1(pw) recovered from a verified token.
type Store struct {
	cfg Config

	mu    sync.Mutex
	cache map[string]*entry
	dbs   map[string]*sql.DB
}

// New returns a Store.
func New(cfg Config) *Store {
	if cfg.TTL == 0 {
		cfg.TTL = 10 * time.Second
	}
	if cfg.MinRefresh == 0 {
		cfg.MinRefresh = 500 * time.Millisecond
	}
	return &Store{cfg: cfg, cache: map[string]*entry{}, dbs: map[string]*sql.DB{}}
}

// Verify checks the client's token for user against salt and returns
// SHA1(password) (nil for an empty password). Errors: ErrDenied,
// ErrUnavailable (wrapped with the cause).
func (s *Store) Verify(ctx context.Context, user string, salt, token []byte) ([]byte, error) {
	for attempt := 0; attempt < 2; attempt++ {
		e, err := s.lookup(ctx, user, attempt == 1)
		if err != nil {
			return nil, err
		}
		for _, h := range e.hashes {
			if st1, ok := wire.Stage1FromToken(salt, token, h); ok {
				return st1, nil
			}
		}
	}
	return nil, ErrDenied
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
	hashes, err := s.fetch(ctx, user)
	if err != nil {
		if e != nil {
			return e, nil // stale beats nothing; MariaDB still checks the backend login
		}
		return nil, err
	}
	e = &entry{hashes: hashes, fetched: now}
	s.mu.Lock()
	s.cache[user] = e
	s.mu.Unlock()
	return e, nil
}

func (s *Store) fetch(ctx context.Context, user string) ([][]byte, error) {
	var last error = errors.New("no address")
	for _, addr := range s.cfg.Addrs() {
		db, err := s.db(addr)
		if err != nil {
			last = err
			continue
		}
		qctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		hashes, err := query(qctx, db, user)
		cancel()
		if err == nil {
			return hashes, nil
		}
		last = fmt.Errorf("%s: %w", addr, err)
	}
	return nil, fmt.Errorf("%w: %v", ErrUnavailable, last)
}

func query(ctx context.Context, db *sql.DB, user string) ([][]byte, error) {
	rows, err := db.QueryContext(ctx,
		"SELECT plugin, authentication_string FROM mysql.user WHERE User = ?", user)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out [][]byte
	for rows.Next() {
		var plugin, as string
		if err := rows.Scan(&plugin, &as); err != nil {
			return nil, err
		}
		if h, ok := parseNative(plugin, as); ok {
			out = append(out, h)
		}
	}
	return out, rows.Err()
}

// parseNative decodes "*HEX" of a mysql_native_password row; "" is the
// empty password (returned as a nil hash).
func parseNative(plugin, as string) ([]byte, bool) {
	if plugin != "" && plugin != wire.NativePlugin {
		return nil, false
	}
	if as == "" {
		return nil, true
	}
	if len(as) != 41 || as[0] != '*' {
		return nil, false
	}
	h, err := hex.DecodeString(strings.ToLower(as[1:]))
	return h, err == nil
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
	c, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, err
	}
	db := sql.OpenDB(c)
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
