package node

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// The tuner's usec follows the ACK time of the period just past, as
// capture's counters tell it (a scripted ACK source, read right after
// each SHOW GLOBAL STATUS): 1.5x the period's mean, kept while no ACK
// was timed, capped at group_commit_wait however slow a round was,
// measured afresh when the wait comes back on, and counted from the
// reading after a skipped period, not from the one before it. Every
// usec binlogd sets lies in [1µs, group_commit_wait], and the term ends
// with the count at 0.
func TestTuneGroupCommitUsecFollowsAckTime(t *testing.T) {
	const (
		ms   = time.Millisecond
		us   = time.Microsecond
		most = 10 * ms
	)
	srv, stop := startTuner(most)
	// g(i): i periods of groups of 5 (20 groups, 100 commits a period),
	// which ask for a count of 9.
	g := func(i uint64) (uint64, uint64) { return 100 * i, 20 * i }
	r := func(i uint64, acks uint64, sum time.Duration) ackScriptedReading {
		c, gr := g(i)
		return ackScriptedReading{commits: c, groups: gr, acks: ackTimes{acks: acks, sum: sum}}
	}
	// Each send is answered by one SHOW GLOBAL STATUS, so the tuner has
	// finished with the reading before once it takes the next: what
	// MariaDB had then (srv.asked) is what that period left.
	step := func(what string, next ackScriptedReading, want waitSetting) {
		t.Helper()
		srv.readings <- next
		if got := srv.asked().w; got != want {
			t.Fatalf("%s: MariaDB has count=%d usec=%v, want count=%d usec=%v", what, got.count, got.usec, want.count, want.usec)
		}
	}
	srv.readings <- r(0, 0, 0) // a term's first period: no wait, usec 2ms
	step("a term's first period", r(1, 100, 320*ms), waitSetting{0, 2 * ms})
	step("groups of 5, ACKs of 3.2ms", r(2, 200, 420*ms), waitSetting{9, 4800 * us})
	step("ACKs of 1ms", r(3, 200, 420*ms), waitSetting{9, 1500 * us})
	sets := srv.asked().sets
	step("no ACK timed: the wait stays", r(4, 210, 1420*ms), waitSetting{9, 1500 * us})
	if got := srv.asked().sets; got != sets {
		t.Errorf("a period without a change sent %d SET statements, want none", got-sets)
	}
	// One slow round (ACKs of 100ms): no longer than group_commit_wait.
	idle := r(4, 220, 1440*ms) // no commits at all in this period
	step("ACKs of 100ms", idle, waitSetting{9, most})
	srv.readings <- r(5, 320, 1760*ms) // groups of 5 again, ACKs of 3.2ms
	if got := srv.asked().w; got.count != 0 || got.usec < us || got.usec > most {
		t.Fatalf("an idle period: count=%d usec=%v, want count 0 and usec within [1µs, %v]", got.count, got.usec, most)
	}
	// Back on: from the ACKs of the period just past, not the 100ms.
	step("back on", ackScriptedReading{err: errors.New("connection reset"), acks: ackTimes{acks: 900, sum: 9 * time.Second}},
		waitSetting{9, 4800 * us})
	// After the skipped period (ACKs of about 12ms around it) the tuner
	// starts from no wait again and times only what follows.
	srv.readings <- r(6, 1000, 10*time.Second)
	step("after a skipped period", r(7, 1100, 10*time.Second+200*ms), waitSetting{0, 2 * ms})
	step("ACKs of 2ms after a skipped period", r(8, 1100, 10*time.Second+200*ms), waitSetting{9, 3 * ms})
	stop()
	if got := srv.last(); got.count != 0 {
		t.Errorf("after the term: count=%d, want 0", got.count)
	}
	for _, w := range srv.history() {
		if w.usec < us || w.usec > most || w.count < 0 {
			t.Errorf("set count=%d usec=%v: want usec within [1µs, %v]", w.count, w.usec, most)
		}
	}
}

// A group_commit_wait below the 200µs floor caps every usec, the first
// one too.
func TestTuneGroupCommitUsecBelowFloor(t *testing.T) {
	const most = 150 * time.Microsecond
	srv, stop := startTuner(most)
	for i := range uint64(4) {
		srv.readings <- ackScriptedReading{commits: 100 * i, groups: 20 * i, acks: ackTimes{acks: 100 * i, sum: time.Duration(i) * 300 * time.Millisecond}}
	}
	stop()
	h := srv.history()
	on := false
	for _, w := range h {
		if w.usec != most {
			t.Errorf("set count=%d usec=%v, want usec %v (group_commit_wait)", w.count, w.usec, most)
		}
		on = on || w.count > 0
	}
	if !on {
		t.Errorf("the wait never came on: %+v", h)
	}
}

// startTuner runs tuneGroupCommit against a new ackScriptedServer;
// stop ends the term and waits for the tuner's turn-off.
func startTuner(most time.Duration) (srv *ackScriptedServer, stop func()) {
	srv = &ackScriptedServer{readings: make(chan ackScriptedReading)}
	db := sql.OpenDB(srv)
	n := &Node{log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		n.tuneGroupCommit(ctx, db, most, srv.ackTimes)
	}()
	return srv, func() {
		cancel()
		<-done
		db.Close()
	}
}

// ackScriptedServer answers the tuner's two statements (SHOW GLOBAL
// STATUS with the next scripted reading, SET GLOBAL by remembering it)
// and scripts capture's ACK counters: a reading's acks are what the
// tuner's ACK source returns from the moment the tuner takes it (the
// driver runs on the tuner's goroutine). It keeps every SET it was sent,
// and what was set when the tuner last asked for a reading.
type ackScriptedServer struct {
	readings chan ackScriptedReading
	mu       sync.Mutex
	acks     ackTimes
	set      []waitSetting
	atAsk    askedState
}

// askedState is what MariaDB had when the tuner took a reading: the last
// SET (count -1: none yet) and how many SETs came so far.
type askedState struct {
	w    waitSetting
	sets int
}

type ackScriptedReading struct {
	commits, groups uint64
	acks            ackTimes
	err             error
}

func (s *ackScriptedServer) ackTimes() ackTimes {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.acks
}

func (s *ackScriptedServer) last() waitSetting {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.set) == 0 {
		return waitSetting{count: -1}
	}
	return s.set[len(s.set)-1]
}

func (s *ackScriptedServer) asked() askedState {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.atAsk
}

func (s *ackScriptedServer) history() []waitSetting {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]waitSetting(nil), s.set...)
}

func (s *ackScriptedServer) Connect(context.Context) (driver.Conn, error) {
	return ackScriptedConn{s}, nil
}
func (s *ackScriptedServer) Driver() driver.Driver { return nil }

type ackScriptedConn struct{ s *ackScriptedServer }

func (c ackScriptedConn) Prepare(string) (driver.Stmt, error) {
	return nil, errors.New("not supported")
}
func (c ackScriptedConn) Close() error              { return nil }
func (c ackScriptedConn) Begin() (driver.Tx, error) { return nil, errors.New("not supported") }

func (c ackScriptedConn) ExecContext(_ context.Context, q string, _ []driver.NamedValue) (driver.Result, error) {
	var usec, count int
	if _, err := fmt.Sscanf(q, "SET GLOBAL binlog_commit_wait_usec=%d, GLOBAL binlog_commit_wait_count=%d", &usec, &count); err != nil {
		return nil, fmt.Errorf("unexpected statement %q: %v", q, err)
	}
	c.s.mu.Lock()
	c.s.set = append(c.s.set, waitSetting{count: count, usec: time.Duration(usec) * time.Microsecond})
	c.s.mu.Unlock()
	return driver.RowsAffected(0), nil
}

func (c ackScriptedConn) QueryContext(ctx context.Context, q string, _ []driver.NamedValue) (driver.Rows, error) {
	if !strings.HasPrefix(q, "SHOW GLOBAL STATUS") {
		return nil, fmt.Errorf("unexpected query %q", q)
	}
	// Taken before the reading is, so the test sees it once its send is.
	c.s.mu.Lock()
	c.s.atAsk = askedState{waitSetting{count: -1}, len(c.s.set)}
	if len(c.s.set) > 0 {
		c.s.atAsk.w = c.s.set[len(c.s.set)-1]
	}
	c.s.mu.Unlock()
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case r := <-c.s.readings:
		c.s.mu.Lock()
		c.s.acks = r.acks
		c.s.mu.Unlock()
		if r.err != nil {
			return nil, r.err
		}
		return &scriptedRows{vals: [][2]string{
			{"Binlog_commits", fmt.Sprint(r.commits)},
			{"Binlog_group_commits", fmt.Sprint(r.groups)},
		}}, nil
	}
}
