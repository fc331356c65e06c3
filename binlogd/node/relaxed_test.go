package node

import (
	"testing"

	"phxgo/binlogd/binlog"
)

// The synced position moves only to a position whose LSN the redo log has
// flushed, never to one still in the OS cache.
func TestDurableTracker(t *testing.T) {
	var d durableTracker
	if _, ok := d.get(); ok {
		t.Fatal("known before any sample")
	}
	d.reset(binlog.GTID{Server: 2, Seq: 10}, true)
	at := func(seq uint64) binlog.GTID { return binlog.GTID{Server: 2, Seq: seq} }
	steps := []struct {
		seq, current, flushed uint64
		want                  uint64
	}{
		{12, 100, 90, 10},  // applied 12, its commit at <= 100, flushed 90: still 10
		{15, 150, 100, 12}, // flushed reached 12's LSN
		{15, 150, 149, 12}, // same position again: no new sample
		{16, 160, 160, 16}, // an idle moment: everything synced
		{20, 200, 0, 16},   // a flushed LSN going back (restart) moves nothing back
	}
	for i, s := range steps {
		d.observe(at(s.seq), s.current, s.flushed)
		if g, ok := d.get(); !ok || g.Seq != s.want {
			t.Fatalf("step %d: durable %v %v, want seq %d", i, g, ok, s.want)
		}
	}
	for i := range 2 * maxLSNSamples {
		d.observe(at(uint64(100+i)), uint64(1000+i), 0)
	}
	if len(d.pending) > maxLSNSamples {
		t.Fatalf("%d pending samples", len(d.pending))
	}
	d.reset(binlog.GTID{}, false)
	if _, ok := d.get(); ok {
		t.Fatal("known after reset to unknown")
	}
}
