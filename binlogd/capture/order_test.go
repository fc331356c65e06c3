package capture

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"sync"
	"testing"
	"time"

	"phxgo/binlogd/binlog"
)

// orderSink is a sink whose batches finish in whatever order the test
// chooses. It checks that Propose is called in stream order, one call
// at a time, and never twice for a GTID.
type orderSink struct {
	t *testing.T

	mu        sync.Mutex
	calls     []BatchInfo
	batches   [][]binlog.Txn
	pend      []*orderPending
	inPropose bool
	maxOpen   int // most batches proposed and not finished at once
	open      int
	err       error // first broken rule
}

type orderPending struct {
	s    *orderSink
	done chan struct{}
	err  error
}

func (p *orderPending) Wait(ctx context.Context) error {
	select {
	case <-p.done:
		return p.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *orderSink) Propose(_ context.Context, b BatchInfo, txns []binlog.Txn) (Pending, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.inPropose {
		s.fail("Propose called concurrently")
	}
	s.inPropose = true
	defer func() { s.inPropose = false }()
	prev := binlog.GTID{}
	if n := len(s.batches); n > 0 {
		last := s.batches[n-1]
		prev = last[len(last)-1].GTID
	}
	if b.Seq != uint64(len(s.calls)+1) || b.Prev != prev {
		s.fail(fmt.Sprintf("batch %+v after %d batches ending %v", b, len(s.calls), prev))
	}
	for _, tx := range txns {
		if tx.GTID.Seq != prev.Seq+1 {
			s.fail(fmt.Sprintf("GTID %v after %v: gap or repeat", tx.GTID, prev))
		}
		prev = tx.GTID
	}
	s.calls = append(s.calls, b)
	s.batches = append(s.batches, append([]binlog.Txn(nil), txns...))
	p := &orderPending{s: s, done: make(chan struct{})}
	s.pend = append(s.pend, p)
	s.open++
	s.maxOpen = max(s.maxOpen, s.open)
	return p, nil
}

func (s *orderSink) fail(why string) {
	if s.err == nil {
		s.err = errors.New(why)
	}
}

// finish ends batch i (0-based) with err.
func (s *orderSink) finish(i int, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.pend[i]
	p.err = err
	s.open--
	close(p.done)
}

// lastOf is the last GTID of batch i (0-based).
func (s *orderSink) lastOf(i int) binlog.GTID {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.batches[i]
	return b[len(b)-1].GTID
}

func (s *orderSink) proposed() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.pend)
}

func txnUnit(seq uint64) *unit {
	return &unit{txn: binlog.Txn{GTID: binlog.GTID{Server: 1, Seq: seq}, Events: make([]byte, 100)},
		end: Position{File: "b.000001", Pos: 1000 + seq}}
}

// startPipeline runs a pipeline over s with no dump connection (the units
// ask for no ACK) and returns its units channel and a stop function that
// ends it, drains it, and returns run's and drain's errors.
func startPipeline(t *testing.T, s Sink, maxInFlight int) (*Capture, chan *unit, func() (error, error)) {
	t.Helper()
	cfg := DefaultConfig()
	cfg.MaxInFlight = maxInFlight
	return startPipelineWith(t, s, cfg, make(chan *unit, 1024))
}

// startPipelineWith is startPipeline with cfg (its connection fields are
// filled in) reading units.
func startPipelineWith(t *testing.T, s Sink, cfg Config, units chan *unit) (*Capture, chan *unit, func() (error, error)) {
	t.Helper()
	cfg.Addr, cfg.User, cfg.ServerID = "x:1", "u", 9
	c, err := New(cfg, s)
	if err != nil {
		t.Fatal(err)
	}
	return c, units, startSession(t, c, units)
}

// startSession runs one more pipeline session of c (as after a
// reconnect) reading units; it returns the stop function.
func startSession(t *testing.T, c *Capture, units chan *unit) func() (error, error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	p := newPipeline(ctx, c, nil)
	runErr := make(chan error, 1)
	go func() { runErr <- p.run(units, make(chan error)) }()
	var once sync.Once
	var rerr, derr error
	stop := func() (error, error) {
		once.Do(func() {
			cancel()
			rerr = <-runErr
			derr = p.drain()
		})
		return rerr, derr
	}
	t.Cleanup(func() { stop() })
	return stop
}

// TestPipelineProposesInStreamOrder: transactions trickle in while the
// sink finishes batches in random order; every batch is proposed once,
// in stream order, by one caller at a time, several are in flight at
// once, and durable advances only over the finished prefix.
func TestPipelineProposesInStreamOrder(t *testing.T) {
	sink := &orderSink{t: t}
	c, units, stop := startPipeline(t, sink, 8)
	rng := rand.New(rand.NewSource(1))
	const total = 400
	go func() {
		feed := rand.New(rand.NewSource(2))
		for seq := uint64(1); seq <= total; seq++ {
			units <- txnUnit(seq)
			if feed.Intn(4) == 0 {
				time.Sleep(time.Duration(feed.Intn(200)) * time.Microsecond)
			}
		}
	}()
	// Finish open batches in random order (letting a few pile up first),
	// checking after each that durable is exactly the end of the
	// finished prefix.
	finished := map[int]bool{}
	prefix := 0
	deadline := time.Now().Add(30 * time.Second)
	for c.Stats().Durable.Seq < total {
		if time.Now().After(deadline) {
			t.Fatalf("durable %v after 30s; %d batches proposed", c.Stats().Durable, sink.proposed())
		}
		n := sink.proposed()
		var open []int
		for i := prefix; i < n; i++ {
			if !finished[i] {
				open = append(open, i)
			}
		}
		if len(open) < 3 {
			time.Sleep(200 * time.Microsecond)
			if sink.proposed() > n || len(open) == 0 {
				continue
			}
		}
		i := open[rng.Intn(len(open))]
		sink.finish(i, nil)
		finished[i] = true
		for finished[prefix] {
			prefix++
		}
		if prefix == 0 {
			continue
		}
		wantSeq := sink.lastOf(prefix - 1).Seq
		await(t, 5*time.Second, fmt.Sprintf("durable to reach %d", wantSeq), func() bool { return c.Stats().Durable.Seq >= wantSeq })
		if got := c.Stats().Durable.Seq; got != wantSeq {
			t.Fatalf("durable %d, finished prefix ends at %d (batch %d)", got, wantSeq, prefix)
		}
	}
	if rerr, derr := stop(); !errors.Is(rerr, context.Canceled) || derr != nil {
		t.Fatalf("run: %v, drain: %v", rerr, derr)
	}
	sink.mu.Lock()
	defer sink.mu.Unlock()
	if sink.err != nil {
		t.Fatal(sink.err)
	}
	st := c.Stats()
	if st.Txns != total || st.Batches != uint64(len(sink.calls)) {
		t.Fatalf("stats %+v, %d batches proposed", st, len(sink.calls))
	}
	if sink.maxOpen < 2 || sink.maxOpen > 8 {
		t.Fatalf("at most %d batches in flight at once, want 2..MaxInFlight(8)", sink.maxOpen)
	}
	t.Logf("%d txns in %d batches, up to %d in flight", total, len(sink.calls), sink.maxOpen)
}

// TestPipelineBatchesWhatIsWaiting: transactions that are already
// waiting when the pipeline looks go into one batch, however many
// in-flight slots are free; those that arrive while it is in flight form
// the next batch together.
func TestPipelineBatchesWhatIsWaiting(t *testing.T) {
	sink := &orderSink{t: t}
	cfg := DefaultConfig()
	cfg.Addr, cfg.User, cfg.ServerID, cfg.MaxInFlight = "x:1", "u", 9, 16
	c, err := New(cfg, sink)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := newPipeline(ctx, c, nil)
	units := make(chan *unit, 1024)
	for seq := uint64(1); seq <= 50; seq++ {
		units <- txnUnit(seq)
	}
	runErr := make(chan error, 1)
	go func() { runErr <- p.run(units, make(chan error)) }()
	await(t, 5*time.Second, "first batch", func() bool { return sink.proposed() == 1 })
	if n := int(sink.lastOf(0).Seq); n != 50 {
		t.Fatalf("first batch has %d txns, want the 50 waiting", n)
	}
	for seq := uint64(51); seq <= 60; seq++ {
		units <- txnUnit(seq)
	}
	await(t, 5*time.Second, "txns 51..60 proposed", func() bool {
		sink.mu.Lock()
		defer sink.mu.Unlock()
		n := 0
		for _, b := range sink.batches {
			n += len(b)
		}
		return n == 60
	})
	sink.finish(0, nil)
	for i := 1; i < sink.proposed(); i++ {
		sink.finish(i, nil)
	}
	await(t, 5*time.Second, "durable 60", func() bool { return c.Stats().Durable.Seq == 60 })
	cancel()
	<-runErr
	if err := p.drain(); err != nil {
		t.Fatal(err)
	}
}

// TestPipelineStopsAtFailedBatch: when a batch fails, the pipeline stops
// with ErrRejected, and a later batch that the sink reports done never
// becomes durable (it chains on the failed one).
func TestPipelineStopsAtFailedBatch(t *testing.T) {
	sink := &orderSink{t: t}
	c, units, stop := startPipeline(t, sink, 8)
	units <- txnUnit(1)
	await(t, 5*time.Second, "batch 1", func() bool { return sink.proposed() == 1 })
	units <- txnUnit(2)
	await(t, 5*time.Second, "batch 2", func() bool { return sink.proposed() == 2 })
	units <- txnUnit(3)
	await(t, 5*time.Second, "batch 3", func() bool { return sink.proposed() == 3 })
	sink.finish(2, nil) // the newest is "done" first
	sink.finish(0, nil)
	await(t, 5*time.Second, "durable 1", func() bool { return c.Stats().Durable.Seq == 1 })
	sink.finish(1, errors.New("rejected"))
	rerr, derr := stop()
	if !errors.Is(rerr, ErrRejected) && !errors.Is(derr, ErrRejected) {
		t.Fatalf("run: %v, drain: %v; want ErrRejected", rerr, derr)
	}
	if d := c.Stats().Durable.Seq; d != 1 {
		t.Fatalf("durable %d after batch 2 failed, want 1", d)
	}
}
