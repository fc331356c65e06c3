package events

import (
	"errors"
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

func TestRingKeepsTheLastEventsInOrder(t *testing.T) {
	b := New(Options{Node: 3})
	defer b.Close()
	for i := 0; i < RingSize+10; i++ {
		b.Publish(Event{Kind: Fence, Details: map[string]string{"i": fmt.Sprint(i)}})
	}
	r := b.Recent()
	if len(r) != RingSize {
		t.Fatalf("ring holds %d events, want %d", len(r), RingSize)
	}
	if r[0].Seq != 11 || r[len(r)-1].Seq != RingSize+10 {
		t.Fatalf("ring spans seq %d..%d, want 11..%d", r[0].Seq, r[len(r)-1].Seq, RingSize+10)
	}
	for i := 1; i < len(r); i++ {
		if r[i].Seq != r[i-1].Seq+1 {
			t.Fatalf("gap in ring at %d: %d after %d", i, r[i].Seq, r[i-1].Seq)
		}
	}
	if r[0].Node != 3 || r[0].Time.IsZero() {
		t.Fatalf("Publish did not fill node/time: %+v", r[0])
	}
	if got := counterValue(t, b.total.WithLabelValues(string(Fence))); got != RingSize+10 {
		t.Fatalf("events_total{kind=fence} = %v", got)
	}
}

// A subscriber sees the ring, then every later event once, without a gap,
// even while another goroutine publishes concurrently.
func TestSubscriberSeesRecentThenLiveWithoutGap(t *testing.T) {
	b := New(Options{})
	defer b.Close()
	for i := 0; i < 5; i++ {
		b.Publish(Event{Kind: BecameReplica})
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 40; i++ {
			b.Publish(Event{Kind: BecameMaster})
		}
	}()
	recent, s := b.Subscribe()
	defer s.Close()
	<-done
	last := recent[len(recent)-1].Seq
	for last < 45 {
		ev := <-s.C()
		if ev.Seq != last+1 {
			t.Fatalf("live event seq %d after %d", ev.Seq, last)
		}
		last = ev.Seq
	}
}

// A reader that stops reading is cut off; Publish does not wait for it.
func TestSlowSubscriberIsCutOffNotWaitedFor(t *testing.T) {
	b := New(Options{})
	defer b.Close()
	_, slow := b.Subscribe()
	_, fine := b.Subscribe()
	defer fine.Close()
	got := 0
	for i := 0; i < SubscriberBuf*3; i++ {
		b.Publish(Event{Kind: Switchover})
		<-fine.C()
		got++
	}
	n := 0
	for range slow.C() { // closed after its buffer
		n++
	}
	if n != SubscriberBuf || !errors.Is(slow.Err(), ErrSlowSubscriber) {
		t.Fatalf("slow subscriber got %d events, err %v; want %d and ErrSlowSubscriber", n, slow.Err(), SubscriberBuf)
	}
	if got != SubscriberBuf*3 {
		t.Fatalf("reading subscriber got %d", got)
	}
	if counterValue(t, b.subsDropped) != 1 {
		t.Fatalf("subscribers dropped = %v", counterValue(t, b.subsDropped))
	}
}

// counterValue reads a counter without prometheus/testutil (not a
// dependency of this module).
func counterValue(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}
