package e2e

import (
	"context"
	"testing"
	"time"

	"phxgo/binlogd/localcluster"
	pb "phxgo/proto"
)

// A switchover shows on the Admin/Events streams: the old master says
// switchover and stepped_down, the new one became_master with cause
// switchover (not failover: the lease was handed over, not lapsed). A
// scenario of TestFailover: the streams replay a node's recent events,
// those of the scenarios before too, so only events from this
// switchover's start on count.
func switchoverEvents(t *testing.T, c *localcluster.Cluster, master uint32) {
	to := master%3 + 1
	since := time.Now().UnixNano()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	watch := func(id uint32) <-chan *pb.Event {
		admin, err := c.Admin(id)
		if err != nil {
			t.Fatal(err)
		}
		st, err := admin.Events(ctx, &pb.EventsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		ch := make(chan *pb.Event, 256)
		go func() {
			defer close(ch)
			for {
				ev, err := st.Recv()
				if err != nil {
					return
				}
				ch <- ev
			}
		}()
		return ch
	}
	oldCh, newCh := watch(master), watch(to)
	admin, err := c.Admin(master)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Switchover(ctx, &pb.SwitchoverRequest{To: to}); err != nil {
		t.Fatal(err)
	}
	await := func(ch <-chan *pb.Event, who uint32, match func(*pb.Event) bool, what string) *pb.Event {
		t.Helper()
		for ev := range ch {
			if ev.TimeUnixNano >= since && match(ev) {
				return ev
			}
		}
		t.Fatalf("node %d: stream ended without %s", who, what)
		return nil
	}
	// The old master's two events come in either order (it may see the
	// lease go before the RPC returns).
	var sw, down *pb.Event
	await(oldCh, master, func(e *pb.Event) bool {
		switch e.Kind {
		case "switchover":
			sw = e
		case "stepped_down":
			down = e
		}
		return sw != nil && down != nil
	}, "switchover and stepped_down")
	if sw.Node != master || sw.Details["to"] != itoa(to) {
		t.Fatalf("switchover event %+v", sw)
	}
	bm := await(newCh, to, func(e *pb.Event) bool { return e.Kind == "became_master" && e.Master == to }, "became_master")
	if bm.Details["cause"] != "switchover" || bm.Details["previous"] != itoa(master) {
		t.Fatalf("became_master event %+v: want cause switchover, previous %d", bm, master)
	}
}
