package node

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"phxgo/binlogd/binlog"
	"phxgo/binlogd/capture"
	"phxgo/masterlease"
)

// TestSinkPacesFragments: a big transaction (16 entries), against real Paxos and
// masterlease, never has more than fragmentsAhead of its entries queued
// on the log and not yet chosen, whether it comes whole (one Propose of
// 16 entries) or as capture streams it (pieces of 4 entries proposed
// back to back, their outcomes awaited in order from another goroutine),
// and every entry ends valid. The bound is what keeps a big transaction
// from crowding the lease's renewals out of the log (a 4-entry bound per
// Propose alone let pieces queue 16 MiB and the lease expire).
func TestSinkPacesFragments(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three Paxos nodes")
	}
	_, m := startLeaseCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var outstanding, peak, queued atomic.Int64
	inner := queueOn(m.px)
	watch := func(ctx context.Context, cmd []byte) (masterlease.Waiter, error) {
		w, err := inner(ctx, cmd)
		if err != nil {
			return nil, err
		}
		queued.Add(1)
		n := outstanding.Add(1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		ww := &watchedWaiter{done: make(chan struct{})}
		go func() { // the entry's own outcome, awaited once, as soon as it is queued
			ww.idx, ww.res, ww.err = w.Wait(context.WithoutCancel(ctx))
			outstanding.Add(-1)
			close(ww.done)
		}()
		return ww, nil
	}
	st := m.lease.State()
	const frag = 16 << 10 // small entries: the pacing is the same, the race detector is slow
	sink := newSink(m.lease, watch, st.Epoch, frag, prometheus.NewCounter(prometheus.CounterOpts{Name: "rejected"}),
		slog.New(slog.NewTextHandler(io.Discard, nil)))
	prev := binlog.GTID(st.LastGTID)
	server := m.lease.ID()
	if !prev.IsZero() {
		server = prev.Server
	}
	seq := prev.Seq
	for _, pieces := range []int{1, 4} {
		seq++
		gtid := binlog.GTID{Server: server, Seq: seq}
		per := 16 / pieces * frag
		queued.Store(0)
		peak.Store(0)
		pend := make(chan capture.Pending, pieces)
		waited := make(chan error, 1)
		go func() { // capture's waiter: outcomes in order
			for range pieces {
				if err := (<-pend).Wait(ctx); err != nil {
					waited <- err
					return
				}
			}
			waited <- nil
		}()
		for i := range pieces {
			tx := binlog.Txn{GTID: gtid, Events: bytes.Repeat([]byte{7}, per), More: i < pieces-1, Offset: uint64(i * per)}
			p, err := sink.Propose(ctx, capture.BatchInfo{Seq: uint64(seq*10) + uint64(i), Prev: prev}, []binlog.Txn{tx})
			if err != nil {
				t.Fatal(err)
			}
			pend <- p
		}
		if err := <-waited; err != nil {
			t.Fatal(err)
		}
		if n := queued.Load(); n != 16 {
			t.Fatalf("%d pieces: %d entries queued, want 16", pieces, n)
		}
		if n := peak.Load(); n > fragmentsAhead {
			t.Fatalf("%d pieces: %d entries queued and not chosen at once, want at most fragmentsAhead=%d", pieces, n, fragmentsAhead)
		}
		t.Logf("%d pieces: peak entries in flight %d (fragmentsAhead %d)", pieces, peak.Load(), fragmentsAhead)
		if got := binlog.GTID(m.lease.State().LastGTID); got != gtid {
			t.Fatalf("log's last valid GTID %v, want %v", got, gtid)
		}
		prev = gtid
	}
}

// watchedWaiter serves an outcome awaited in the background.
type watchedWaiter struct {
	done chan struct{}
	idx  uint64
	res  any
	err  error
}

func (w *watchedWaiter) Wait(ctx context.Context) (uint64, any, error) {
	select {
	case <-w.done:
		return w.idx, w.res, w.err
	case <-ctx.Done():
		return 0, nil, ctx.Err()
	}
}
