package capture

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"

	"phxgo/binlogd/binlog"
	"phxgo/binlogd/mysqld"
)

// master is a real mariadbd set up as a phxgo master: accounts
// bootstrapped with semi-sync off, schema t.x created, then semi-sync on.
type master struct {
	inst *mysqld.Instance
	db   *sql.DB // root
}

func newMaster(t *testing.T) *master {
	t.Helper()
	inst := mysqld.NewTestInstance(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db, err := inst.DB("")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(64)
	t.Cleanup(func() { db.Close() })
	if err := mysqld.Bootstrap(ctx, db, mysqld.DefaultAccounts()); err != nil {
		t.Fatal(err)
	}
	mustExec(t, db, "CREATE DATABASE t", "CREATE TABLE t.x (id INT PRIMARY KEY, v LONGBLOB)",
		"SET GLOBAL rpl_semi_sync_master_enabled=ON")
	return &master{inst: inst, db: db}
}

func mustExec(t *testing.T, db *sql.DB, stmts ...string) {
	t.Helper()
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

func (m *master) config() Config {
	a := mysqld.DefaultAccounts()
	cfg := DefaultConfig()
	cfg.Addr, cfg.User, cfg.Password, cfg.ServerID = m.inst.Addr(), a.CaptureUser, a.CapturePassword, 1000
	cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	return cfg
}

// recSink records what it made "durable" and can delay, block or fail.
type recSink struct {
	mu      sync.Mutex
	txns    []binlog.Txn
	batches []int
	infos   []BatchInfo
	delay   time.Duration
	gate    chan struct{} // when non-nil, Commit waits for it to be closed
	fail    error
	changed chan struct{}
}

func newRecSink() *recSink { return &recSink{changed: make(chan struct{}, 1)} }

func (s *recSink) Commit(ctx context.Context, txns []binlog.Txn) error {
	s.mu.Lock()
	delay, gate, fail := s.delay, s.gate, s.fail
	s.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if delay > 0 {
		time.Sleep(delay)
	}
	if fail != nil {
		return fail
	}
	info, _ := BatchFrom(ctx)
	s.mu.Lock()
	s.txns = append(s.txns, txns...)
	s.batches = append(s.batches, len(txns))
	s.infos = append(s.infos, info)
	s.mu.Unlock()
	select {
	case s.changed <- struct{}{}:
	default:
	}
	return nil
}

func (s *recSink) setGate(g chan struct{}) { s.mu.Lock(); s.gate = g; s.mu.Unlock() }

func (s *recSink) snapshot() []binlog.Txn {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]binlog.Txn(nil), s.txns...)
}

// runCapture starts Run in the background; the returned func cancels it
// and returns Run's error.
func runCapture(t *testing.T, cfg Config, sink Sink) (*Capture, <-chan error, func() error) {
	t.Helper()
	c, err := New(cfg, sink)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	var once sync.Once
	var res error
	stop := func() error {
		once.Do(func() {
			cancel()
			select {
			case res = <-done:
			case <-time.After(30 * time.Second):
				res = errors.New("Run did not return within 30s of cancel")
			}
		})
		return res
	}
	t.Cleanup(func() { _ = stop() })
	return c, done, stop
}

// await polls cond until it holds or the deadline passes.
func await(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// checkTxns asserts txns are whole, framed, GTID-first, strictly
// increasing, and returns the number of rows of t.x they insert
// (counted by write-rows events).
func checkTxns(t *testing.T, txns []binlog.Txn) {
	t.Helper()
	for i, tx := range txns {
		evs, err := binlog.SplitEvents(tx.Events)
		if err != nil {
			t.Fatalf("txn %v: %v", tx.GTID, err)
		}
		if len(evs) < 2 || evs[0][4] != 162 {
			t.Fatalf("txn %v: %d events, first type %d", tx.GTID, len(evs), evs[0][4])
		}
		if i > 0 && tx.GTID.Seq != txns[i-1].GTID.Seq+1 {
			t.Fatalf("txn %d: GTID %v after %v (gap or duplicate)", i, tx.GTID, txns[i-1].GTID)
		}
	}
}

func gtidPos(t *testing.T, db *sql.DB) binlog.GTID {
	t.Helper()
	var s string
	if err := db.QueryRow("SELECT @@gtid_binlog_pos").Scan(&s); err != nil {
		t.Fatal(err)
	}
	g, err := binlog.ParseGTID(s)
	if err != nil {
		t.Fatal(fmt.Errorf("%q: %w", s, err))
	}
	return g
}
