package e2e

import (
	"context"
	"testing"
	"time"

	"phxgo/binlogd/localcluster"
	pb "phxgo/proto"
)

// A switchover hands the lease to a chosen caught-up node without waiting
// for expiry; writes continue on the new master and no acknowledged write
// is lost. A scenario of TestFailover.
func switchover(t *testing.T, c *localcluster.Cluster, master uint32, w *writers) {
	to := master%3 + 1
	admin, err := c.Admin(master)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Now()
	r, err := admin.Switchover(ctx, &pb.SwitchoverRequest{To: to})
	if err != nil {
		t.Fatal(err)
	}
	if r.MasterId != to {
		t.Fatalf("switchover granted to %d, want %d", r.MasterId, to)
	}
	awaitReadyMaster(ctx, t, c, to)
	t.Logf("switchover %d -> %d: new master ready after %.2fs", master, to, time.Since(start).Seconds())
	// Switching to the current master or a non-member is refused.
	if _, err := admin.Switchover(ctx, &pb.SwitchoverRequest{To: 9}); err == nil {
		t.Fatal("switchover to a non-member accepted")
	}
	finish(t, c, w, start, "switchover")
}
