package capture

import (
	"context"
	"runtime"
	"testing"
	"weak"

	"phxgo/binlogd/binlog"
)

// TestDurableBatchIsReleased: once a batch is durable the pipeline holds
// nothing of it, although the slice of batches in flight keeps its array:
// a big transaction's durable pieces must not stay reachable behind the
// slice's start (the master held 16 MiB of them beyond its budget).
func TestDurableBatchIsReleased(t *testing.T) {
	c, err := New(func() Config {
		cfg := DefaultConfig()
		cfg.Addr, cfg.User, cfg.ServerID = "x:1", "u", 9
		return cfg
	}(), nopSink{})
	if err != nil {
		t.Fatal(err)
	}
	p := newPipeline(context.Background(), c, nil)
	var events []weak.Pointer[byte]
	for seq := uint64(1); seq <= 4; seq++ {
		ev := make([]byte, 1<<20)
		events = append(events, weak.Make(&ev[0]))
		p.inflight = append(p.inflight, &batch{txns: []binlog.Txn{{GTID: binlog.GTID{Server: 1, Seq: seq}, Events: ev}}, bytes: len(ev)})
	}
	for range 2 {
		if err := p.durable(result{b: p.inflight[0]}); err != nil {
			t.Fatal(err)
		}
	}
	runtime.GC()
	for i, w := range events {
		if held := w.Value() != nil; held != (i >= 2) {
			t.Errorf("batch %d: events reachable %v, want %v (durable: the first two)", i+1, held, i >= 2)
		}
	}
	runtime.KeepAlive(p)
}

type nopSink struct{}

func (nopSink) Propose(context.Context, BatchInfo, []binlog.Txn) (Pending, error) { return nil, nil }
