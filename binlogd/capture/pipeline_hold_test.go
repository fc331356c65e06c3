package capture

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"
)

func groupUnit(seq, commitID uint64) *unit {
	u := txnUnit(seq)
	u.commitID = commitID
	return u
}

// holdHarness runs a pipeline with cfg over an unbuffered units channel:
// a send returns once the pipeline took the unit, so whatever it
// proposes for it is proposed before the next send returns.
type holdHarness struct {
	t     *testing.T
	sink  *orderSink
	c     *Capture
	units chan *unit
	stop  func() (error, error)
}

func newHoldHarness(t *testing.T, hold time.Duration) *holdHarness {
	cfg := DefaultConfig()
	cfg.GroupHold = hold
	return newHoldHarnessWith(t, cfg)
}

func newHoldHarnessWith(t *testing.T, cfg Config) *holdHarness {
	h := &holdHarness{t: t, sink: &orderSink{t: t}, units: make(chan *unit)}
	h.c, _, h.stop = startPipelineWith(t, h.sink, cfg, h.units)
	return h
}

func (h *holdHarness) send(us ...*unit) {
	for _, u := range us {
		h.units <- u
	}
}

// batch waits for batch i and checks the sequence numbers it holds.
func (h *holdHarness) batch(i int, seqs ...uint64) {
	h.t.Helper()
	await(h.t, 5*time.Second, "batch proposed", func() bool { return h.sink.proposed() > i })
	h.sink.mu.Lock()
	var got []uint64
	for _, tx := range h.sink.batches[i] {
		got = append(got, tx.GTID.Seq)
	}
	h.sink.mu.Unlock()
	if !slices.Equal(got, seqs) {
		h.t.Fatalf("batch %d holds %v, want %v", i, got, seqs)
	}
}

// notProposed checks that batch i is still not proposed a while after
// the units before it were taken. A pipeline without the hold proposes
// within microseconds, so the wait cannot make this pass wrongly except
// on a host stalled for all of it.
func (h *holdHarness) notProposed(i int) {
	h.t.Helper()
	time.Sleep(50 * time.Millisecond)
	if n := h.sink.proposed(); n > i {
		h.t.Fatalf("batch %d proposed while its group's head should wait", i)
	}
}

// durable finishes batches from..to-1 and awaits last durable.
func (h *holdHarness) durable(last uint64, from, to int) {
	h.t.Helper()
	for i := from; i < to; i++ {
		h.sink.finish(i, nil)
	}
	await(h.t, 5*time.Second, "durable", func() bool { return h.c.Stats().Durable.Seq == last })
}

// end is durable, then stops the pipeline and returns its Stats.
func (h *holdHarness) end(last uint64, from, to int) Stats {
	h.t.Helper()
	h.durable(last, from, to)
	if rerr, derr := h.stop(); !errors.Is(rerr, context.Canceled) || derr != nil {
		h.t.Fatalf("run: %v, drain: %v", rerr, derr)
	}
	return h.c.Stats()
}

// TestPipelineHoldsAGroupHead: the first transaction of a MariaDB group
// commit of two or more, arriving alone, waits for the next one and
// goes with it in one batch; a transaction that committed alone, or a
// group's later one arriving alone, goes at once (issue 19: the group's
// first transaction alone made a Paxos value of its own).
func TestPipelineHoldsAGroupHead(t *testing.T) {
	h := newHoldHarness(t, time.Minute)
	h.send(groupUnit(1, 100))
	h.notProposed(0)
	h.send(groupUnit(2, 100))
	h.batch(0, 1, 2) // without the hold: [1] then [2]
	h.send(groupUnit(3, 100))
	h.batch(1, 3) // the group's third: not a head, not held
	// Retire what is in flight before each next step, so a slot is free
	// and only the hold can keep a batch back.
	h.durable(3, 0, 2)
	h.send(groupUnit(4, 0))
	h.batch(2, 4) // committed alone
	h.durable(4, 2, 3)
	h.send(groupUnit(5, 200))
	h.notProposed(3)
	h.send(groupUnit(6, 300))
	h.batch(3, 5, 6) // a head goes with whatever arrives next
	st := h.end(6, 3, 4)
	if st.Held != 2 || st.HoldTimeouts != 0 || st.HeldTime <= 0 {
		t.Fatalf("held %d (%v), %d timeouts; want 2 holds (batches 0 and 3), none timed out", st.Held, st.HeldTime, st.HoldTimeouts)
	}
}

// TestPipelineGroupHoldIsBounded: a head whose next transaction never
// comes goes alone after GroupHold, and counts as a timeout.
func TestPipelineGroupHoldIsBounded(t *testing.T) {
	const hold = 30 * time.Millisecond
	h := newHoldHarness(t, hold)
	start := time.Now()
	h.send(groupUnit(1, 100))
	h.batch(0, 1)
	if waited := time.Since(start); waited < hold || waited > hold+2*time.Second {
		t.Fatalf("proposed after %v; the hold was %v", waited, hold)
	}
	st := h.end(1, 0, 1)
	if st.Held != 1 || st.HoldTimeouts != 1 || st.HeldTime < hold {
		t.Fatalf("held %d for %v, %d timeouts; want 1 for at least %v, timed out", st.Held, st.HeldTime, st.HoldTimeouts, hold)
	}
}

// TestPipelineGroupHoldOff: GroupHold 0 proposes a head at once.
func TestPipelineGroupHoldOff(t *testing.T) {
	h := newHoldHarness(t, 0)
	h.send(groupUnit(1, 100))
	h.batch(0, 1)
	h.send(groupUnit(2, 100))
	h.batch(1, 2)
	if st := h.end(2, 0, 2); st.Held != 0 {
		t.Fatalf("held %d with the hold off", st.Held)
	}
}

// TestPipelineGroupHeadGoesWhenTheNextCannotJoin: a head whose next
// transaction is too big to join its batch (it waits for the next batch,
// and reading pauses) goes at once: the group's next one is here.
func TestPipelineGroupHeadGoesWhenTheNextCannotJoin(t *testing.T) {
	cfg := DefaultConfig()
	cfg.GroupHold = time.Minute
	cfg.BatchMaxBytes = 150 // a txnUnit is 100 bytes: two do not fit
	h := newHoldHarnessWith(t, cfg)
	h.send(groupUnit(1, 100))
	h.notProposed(0)
	h.send(groupUnit(2, 100))
	h.batch(0, 1)
	h.batch(1, 2)
	st := h.end(2, 0, 2)
	if st.Held != 1 || st.HoldTimeouts != 0 {
		t.Fatalf("held %d, %d timeouts; want 1 hold, ended by the next transaction", st.Held, st.HoldTimeouts)
	}
}

// TestPipelineGroupHoldCountsTheSlotWait: GroupHold runs from the head's
// arrival; a head that waited that long for a free MaxInFlight slot goes
// as soon as one frees, without a hold of its own.
func TestPipelineGroupHoldCountsTheSlotWait(t *testing.T) {
	const hold = 20 * time.Millisecond
	cfg := DefaultConfig()
	cfg.GroupHold = hold
	cfg.MaxInFlight = 1
	h := newHoldHarnessWith(t, cfg)
	h.send(groupUnit(1, 0))
	h.batch(0, 1)
	h.send(groupUnit(2, 100)) // a head, with the only slot taken
	time.Sleep(2 * hold)      // longer than GroupHold: time must pass, nothing to await
	h.sink.finish(0, nil)
	h.batch(1, 2)
	st := h.end(2, 1, 2)
	if st.Held != 0 || st.HoldTimeouts != 0 {
		t.Fatalf("held %d (%v), %d timeouts; want no hold after the slot wait", st.Held, st.HeldTime, st.HoldTimeouts)
	}
}

// TestPipelineGroupHoldAfterReconnect: a session resumes right after the
// last durable transaction; the next member of that transaction's group
// is not taken for a new group's head.
func TestPipelineGroupHoldAfterReconnect(t *testing.T) {
	h := newHoldHarness(t, time.Minute)
	h.send(groupUnit(1, 100), groupUnit(2, 100))
	h.batch(0, 1, 2)
	h.durable(2, 0, 1)
	if rerr, derr := h.stop(); !errors.Is(rerr, context.Canceled) || derr != nil {
		t.Fatalf("run: %v, drain: %v", rerr, derr)
	}
	units := make(chan *unit)
	stop := startSession(t, h.c, units)
	units <- groupUnit(3, 100) // the same group, cut by the reconnect
	h.batch(1, 3)
	h.sink.finish(1, nil)
	await(t, 5*time.Second, "durable 3", func() bool { return h.c.Stats().Durable.Seq == 3 })
	if rerr, derr := stop(); !errors.Is(rerr, context.Canceled) || derr != nil {
		t.Fatalf("run: %v, drain: %v", rerr, derr)
	}
}

// TestPipelineGroupHoldTimerRearms: the hold's timer, once fired, times
// the next head's hold too.
func TestPipelineGroupHoldTimerRearms(t *testing.T) {
	const hold = 20 * time.Millisecond
	h := newHoldHarness(t, hold)
	h.send(groupUnit(1, 100))
	h.batch(0, 1)
	h.send(groupUnit(2, 200))
	h.batch(1, 2)
	st := h.end(2, 0, 2)
	if st.Held != 2 || st.HoldTimeouts != 2 {
		t.Fatalf("held %d, %d timeouts; want both heads held until the timer", st.Held, st.HoldTimeouts)
	}
}

// TestPipelineGroupHeadRejected: a held batch the log rejects counts as
// neither held nor timed out (Stats count durable batches), and capture
// stops with ErrRejected.
func TestPipelineGroupHeadRejected(t *testing.T) {
	h := newHoldHarness(t, 20*time.Millisecond)
	h.send(groupUnit(1, 100))
	h.batch(0, 1)
	h.sink.finish(0, errors.New("no"))
	rerr, _ := h.stop()
	if !errors.Is(rerr, ErrRejected) && !errors.Is(rerr, context.Canceled) {
		t.Fatalf("run: %v", rerr)
	}
	if st := h.c.Stats(); st.Held != 0 || st.HoldTimeouts != 0 {
		t.Fatalf("held %d, %d timeouts for a rejected batch", st.Held, st.HoldTimeouts)
	}
}
