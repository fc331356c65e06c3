package node

import (
	"testing"
	"time"
)

func TestNextWaitCount(t *testing.T) {
	g := func(commits, groups uint64) groupCounters { return groupCounters{commits: commits, groups: groups} }
	cases := []struct {
		name string
		cur  int
		d    groupCounters
		want int
	}{
		{"idle turns it off", 9, g(0, 0), 0},
		{"a trickle turns it off", 9, g(70, 7), 0},
		{"a lone client keeps the wait off", 0, g(300, 300), 0},
		{"groups of 2.5 ask for 1.5 times that, plus one", 0, g(500, 200), 5},
		{"too few groups to turn it on", 0, g(50, 5), 0},
		{"the count follows the groups up", 6, g(800, 100), 13},
		{"and down", 13, g(400, 100), 7},
		{"the count is capped", groupWaitMaxCount, g(100000, 20), groupWaitMaxCount},
		{"a lone client behind a count turns it off", 8, g(60, 60), 0},
		{"groups of 1.2 are no reason to wait", 3, g(120, 100), 0},
		{"groups of 1.4 turn it on", 0, g(140, 100), 4},
		{"but with the wait on, 1.4 turns it off: the wait made them", 4, g(140, 100), 0},
	}
	for _, c := range cases {
		if got := nextWaitCount(c.cur, c.d); got != c.want {
			t.Errorf("%s: nextWaitCount(%d, %+v) = %d, want %d", c.name, c.cur, c.d, got, c.want)
		}
	}
}

// A steady load settles: groups can hold at most the clients that
// commit at once, so the count stops at half as many again, plus one,
// and does not run away.
func TestNextWaitCountSettles(t *testing.T) {
	const clients = 16
	cur := 0
	var seen []int
	for range 40 {
		// A crude model: without a wait groups hold 4.7; with one they
		// hold the count, or every client when it asks for more.
		size := uint64(min(cur, clients))
		if cur == 0 {
			size = 5
		}
		cur = nextWaitCount(cur, groupCounters{commits: 100 * size, groups: 100})
		seen = append(seen, cur)
	}
	if want := clients*3/2 + 1; seen[len(seen)-1] != want {
		t.Fatalf("count settled at %d, want %d: %v", seen[len(seen)-1], want, seen)
	}
}

func TestGroupCountersMinusAfterReset(t *testing.T) {
	a := groupCounters{commits: 100, groups: 40}
	b := groupCounters{commits: 3, groups: 2} // FLUSH STATUS between
	if d := b.minus(a); d != (groupCounters{}) {
		t.Fatalf("counters that went back: %+v, want zero", d)
	}
}

func TestNextWaitUsec(t *testing.T) {
	const ms = time.Millisecond
	acks := func(n uint64, sum time.Duration) ackTimes { return ackTimes{acks: n, sum: sum} }
	cases := []struct {
		name string
		cur  time.Duration
		a    ackTimes
		most time.Duration
		want time.Duration
	}{
		{"a term's first wait, before any ACK", 0, acks(0, 0), 10 * ms, 2 * ms},
		{"... within group_commit_wait", 0, acks(0, 0), ms, ms},
		{"1.5x the mean ACK time of the period", 2 * ms, acks(100, 320*ms), 10 * ms, 4800 * time.Microsecond},
		{"rounded to 100µs", 2 * ms, acks(3, 4100*time.Microsecond), 10 * ms, 2100 * time.Microsecond},
		{"a mean that rounds to 0 still waits 200µs", 2 * ms, acks(1000, 30*ms), 10 * ms, 200 * time.Microsecond},
		{"a short round still waits 200µs", 2 * ms, acks(100, 5*ms), 10 * ms, 200 * time.Microsecond},
		{"a slow round waits group_commit_wait at most", 2 * ms, acks(10, 400*ms), 10 * ms, 10 * ms},
		{"no ACK timed keeps the wait", 3 * ms, acks(0, 0), 10 * ms, 3 * ms},
		{"a smaller group_commit_wait caps a kept wait", 3 * ms, acks(0, 0), 2 * ms, 2 * ms},
	}
	for _, c := range cases {
		if got := nextWaitUsec(c.cur, c.a, c.most); got != c.want {
			t.Errorf("%s: nextWaitUsec(%v, %+v, %v) = %v, want %v", c.name, c.cur, c.a, c.most, got, c.want)
		}
	}
}

func TestAckTimesMinusAfterNewCapture(t *testing.T) {
	a := ackTimes{acks: 100, sum: time.Second}
	b := ackTimes{acks: 3, sum: 9 * time.Millisecond} // a new term's capture counts from 0
	if d := b.minus(a); d != (ackTimes{}) {
		t.Fatalf("counters that went back: %+v, want zero", d)
	}
	if d := a.minus(b); d != (ackTimes{acks: 97, sum: 991 * time.Millisecond}) {
		t.Fatalf("a.minus(b) = %+v", d)
	}
}
