package capture

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime/pprof"
	"strings"
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
	inst, db := mysqld.NewTestServer(t, 1)
	db.SetMaxOpenConns(64)
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
// Like a Paxos node, it queues each Propose at once and finishes batches
// on their own goroutines, so outcomes may be ready in any order;
// snapshot puts batches back in order (BatchInfo.Seq) and checks their
// Prev chain. proposed counts Propose calls that broke the stream order.
type recSink struct {
	mu       sync.Mutex
	batches  map[uint64][]binlog.Txn
	infos    map[uint64]BatchInfo
	lastSeq  uint64
	lastGTID binlog.GTID
	misorder int
	delay    time.Duration
	gate     chan struct{} // when non-nil, batches wait for it to be closed
	fail     error
}

func newRecSink() *recSink {
	return &recSink{batches: map[uint64][]binlog.Txn{}, infos: map[uint64]BatchInfo{}}
}

type recPending struct {
	done chan struct{}
	err  error
}

func (p *recPending) Wait(ctx context.Context) error {
	select {
	case <-p.done:
		return p.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *recSink) Propose(ctx context.Context, info BatchInfo, txns []binlog.Txn) (Pending, error) {
	s.mu.Lock()
	if info.Seq != s.lastSeq+1 || s.lastSeq > 0 && info.Prev != s.lastGTID {
		s.misorder++
	}
	s.lastSeq = info.Seq
	if t := txns[len(txns)-1]; t.Ends() {
		s.lastGTID = t.GTID
	}
	delay, gate, fail := s.delay, s.gate, s.fail
	s.mu.Unlock()
	txns = append([]binlog.Txn(nil), txns...)
	p := &recPending{done: make(chan struct{})}
	go func() {
		defer close(p.done)
		if gate != nil {
			select {
			case <-gate:
			case <-ctx.Done():
				p.err = ctx.Err()
				return
			}
		}
		if delay > 0 {
			time.Sleep(delay)
		}
		if fail != nil {
			p.err = fail
			return
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if _, dup := s.batches[info.Seq]; dup {
			p.err = fmt.Errorf("recSink: batch %d twice", info.Seq)
			return
		}
		s.batches[info.Seq] = txns
		s.infos[info.Seq] = info
	}()
	return p, nil
}

func (s *recSink) setGate(g chan struct{}) { s.mu.Lock(); s.gate = g; s.mu.Unlock() }

func (s *recSink) has(g binlog.GTID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, b := range s.batches {
		for _, tx := range b {
			if tx.GTID == g && tx.Ends() {
				return true
			}
		}
	}
	return false
}

func (s *recSink) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, b := range s.batches {
		n += len(b)
	}
	return n
}

// snapshot returns the txns of the contiguous prefix of batches 1..k in
// dispatch order, checking each batch chains on the previous one, with
// the pieces of a split transaction joined (checking their offsets).
func (s *recSink) snapshot(t *testing.T) []binlog.Txn {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []binlog.Txn
	var prev binlog.GTID
	var open *binlog.Txn
	for seq := uint64(1); ; seq++ {
		b, ok := s.batches[seq]
		if !ok {
			return out
		}
		if s.infos[seq].Prev != prev {
			t.Fatalf("batch %d: Prev=%v, previous batch ended at %v", seq, s.infos[seq].Prev, prev)
		}
		for _, tx := range b {
			if tx.Whole() {
				out = append(out, tx)
				continue
			}
			if len(b) != 1 {
				t.Fatalf("batch %d: a piece of %v shares its batch", seq, tx.GTID)
			}
			if tx.Offset == 0 {
				open = &binlog.Txn{GTID: tx.GTID}
			}
			if open == nil || open.GTID != tx.GTID || uint64(len(open.Events)) != tx.Offset {
				t.Fatalf("batch %d: piece of %v at offset %d does not continue %+v", seq, tx.GTID, tx.Offset, open)
			}
			open.Events = append(open.Events, tx.Events...)
			if !tx.More {
				out = append(out, *open)
				open = nil
			}
		}
		if lt := b[len(b)-1]; lt.Ends() {
			prev = lt.GTID
		}
	}
}

// runCapture starts Run in the background. done is closed when Run
// returns; stop cancels it and returns Run's error.
func runCapture(t *testing.T, cfg Config, sink Sink) (c *Capture, done <-chan struct{}, stop func() error) {
	t.Helper()
	c, err := New(cfg, sink)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	finished := make(chan struct{})
	var res error
	go func() {
		res = c.Run(ctx)
		close(finished)
	}()
	stop = func() error {
		cancel()
		select {
		case <-finished:
			return res
		case <-time.After(30 * time.Second):
			var b strings.Builder
			_ = pprof.Lookup("goroutine").WriteTo(&b, 2)
			return fmt.Errorf("Run did not return within 30s of cancel:\n%s", b.String())
		}
	}
	t.Cleanup(func() {
		if err := stop(); err != nil && !errors.Is(err, context.Canceled) {
			t.Logf("Run: %v", err)
		}
	})
	return c, finished, stop
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
