package capture

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"
)

// TestPipelineDefaultPipelinesOneBatch: with the default MaxInFlight (2)
// a batch goes at once while at most one other is in flight, and what
// arrives while two are in flight becomes ONE batch, proposed when the
// oldest is durable. More slots cut a MariaDB commit group, which reaches
// the dump over several reads, into more batches: each a Paxos command
// of its own, about the same CPU whatever it holds (issue 19).
func TestPipelineDefaultPipelinesOneBatch(t *testing.T) {
	sink := &orderSink{t: t}
	// Unbuffered: a send returns once the pipeline took the unit, so the
	// next send returns only after the previous unit was batched and,
	// if a slot was free, proposed.
	units := make(chan *unit)
	c, _, stop := startPipelineWith(t, sink, DefaultConfig(), units)
	send := func(seqs ...uint64) {
		for _, s := range seqs {
			units <- txnUnit(s)
		}
	}
	want := func(i int, seqs ...uint64) {
		t.Helper()
		await(t, 5*time.Second, "batch proposed", func() bool { return sink.proposed() > i })
		sink.mu.Lock()
		var got []uint64
		for _, tx := range sink.batches[i] {
			got = append(got, tx.GTID.Seq)
		}
		sink.mu.Unlock()
		if !slices.Equal(got, seqs) {
			t.Fatalf("batch %d holds %v, want %v", i, got, seqs)
		}
	}

	send(1)
	want(0, 1)
	send(2)
	want(1, 2) // one in flight: pipelined
	send(3, 4, 5)
	if n := sink.proposed(); n != 2 {
		t.Fatalf("%d batches proposed with two in flight, want 2", n)
	}
	sink.finish(0, nil)
	want(2, 3, 4, 5) // everything that waited, as one batch
	send(6)
	sink.finish(1, nil)
	want(3, 6)
	sink.finish(2, nil)
	sink.finish(3, nil)
	await(t, 5*time.Second, "durable 6", func() bool { return c.Stats().Durable.Seq == 6 })
	if rerr, derr := stop(); !errors.Is(rerr, context.Canceled) || derr != nil {
		t.Fatalf("run: %v, drain: %v", rerr, derr)
	}
	sink.mu.Lock()
	defer sink.mu.Unlock()
	if sink.err != nil || sink.maxOpen != 2 {
		t.Fatalf("sink: %v; at most %d in flight, want 2", sink.err, sink.maxOpen)
	}
}

// TestPipelineCountsWhereACycleWaits: a batch whose first transaction
// arrives while another is in flight counts as overlapped; one that
// arrives with nothing in flight counts as starved, with the time since
// the last batch in flight became durable (issue 19: the part of a
// commit cycle spent in MariaDB rather than in binlogd); one after a
// longer idle spell than maxTurnaround counts as neither.
func TestPipelineCountsWhereACycleWaits(t *testing.T) {
	sink := &orderSink{t: t}
	units := make(chan *unit)
	c, _, stop := startPipelineWith(t, sink, DefaultConfig(), units)
	units <- txnUnit(1)
	await(t, 5*time.Second, "batch 0 proposed", func() bool { return sink.proposed() > 0 })
	units <- txnUnit(2)
	await(t, 5*time.Second, "batch 1 proposed", func() bool { return sink.proposed() > 1 })
	sink.finish(0, nil)
	sink.finish(1, nil)
	await(t, 5*time.Second, "durable 2", func() bool { return c.Stats().Durable.Seq == 2 })
	const gap = 30 * time.Millisecond
	time.Sleep(gap) // the idle time the next batch must account for
	units <- txnUnit(3)
	await(t, 5*time.Second, "batch 2 proposed", func() bool { return sink.proposed() > 2 })
	sink.finish(2, nil)
	await(t, 5*time.Second, "durable 3", func() bool { return c.Stats().Durable.Seq == 3 })
	time.Sleep(maxTurnaround + 20*time.Millisecond) // idleness, not a turnaround
	units <- txnUnit(4)
	await(t, 5*time.Second, "batch 3 proposed", func() bool { return sink.proposed() > 3 })
	sink.finish(3, nil)
	await(t, 5*time.Second, "durable 4", func() bool { return c.Stats().Durable.Seq == 4 })
	st := c.Stats()
	if st.Overlapped != 1 || st.Starved != 1 {
		t.Fatalf("overlapped %d, starved %d; want 1 and 1 (batch 1 behind batch 0; batch 2 after both were durable; batch 3 after idleness)", st.Overlapped, st.Starved)
	}
	if st.StarvedTime < gap || st.StarvedTime > 5*time.Second {
		t.Fatalf("starved for %v, want at least the %v between batch 1's durability and batch 2", st.StarvedTime, gap)
	}
	if rerr, derr := stop(); !errors.Is(rerr, context.Canceled) || derr != nil {
		t.Fatalf("run: %v, drain: %v", rerr, derr)
	}
}
