package hosts

import (
	"errors"
	"testing"
	"time"
)

// TestOutage: the failover figure is the longest stretch without an
// acknowledgement after the cut began, counted from the last ack before
// it; acks that slip in while the cut takes effect do not hide it.
func TestOutage(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	w := &writer{}
	for _, ms := range []int{0, 100, 200, 210, 220, 5800, 5900, 6000} {
		w.acked = append(w.acked, ack{at: at(ms)})
	}
	for _, c := range []struct {
		from, to int
		want     time.Duration
	}{
		{205, 7000, 5580 * time.Millisecond}, // the cut began at 205 ms; two acks still landed
		{5850, 7000, 100 * time.Millisecond},
		{7000, 8000, 0},
		{205, 5000, 10 * time.Millisecond}, // no ack after the outage yet: not counted
	} {
		if got := w.outage(at(c.from), at(c.to)); got != c.want {
			t.Errorf("outage(%d ms, %d ms) = %v, want %v", c.from, c.to, got, c.want)
		}
	}
}

func TestLine(t *testing.T) {
	r := Result{Nodes: 4, Failover: 5600 * time.Millisecond, Added: 1, Removed: 1, Pass: true}
	if got, want := r.Line(), "hosts_test=pass nodes=4 failover_s=5.6 added=1 removed=1 unsafe=0 lost=0"; got != want {
		t.Fatalf("Line() = %q, want %q", got, want)
	}
	r.Pass, r.Failure, r.Lost = false, errors.New("x"), 2
	if got, want := r.Line(), "hosts_test=fail nodes=4 failover_s=5.6 added=1 removed=1 unsafe=0 lost=2"; got != want {
		t.Fatalf("Line() = %q, want %q", got, want)
	}
}
