package sqlproxy

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"phxgo/binlogd/localcluster"
	pb "phxgo/proto"
	"phxgo/sqlproxy/topology"
)

// TestE2ESwitchoverOwnProxy: on a switchover the old master's own proxy
// has stopped serving before the grant to the new master is chosen,
// whenever its status push arrives. A topology.Admin on the master's
// binlogd (what that node's sqlproxy runs) is sampled as the proxy checks
// it before every send; every deadline under which it would have served
// must end before Switchover returned (the grant is chosen by then). A
// deadline derived from a status (the time it was asked plus the lease
// left), as before WatchStatus, ends seconds later and fails this.
// Skipped with -short.
func TestE2ESwitchoverOwnProxy(t *testing.T) {
	bin := t.TempDir()
	if err := localcluster.BuildBinaries(bin); err != nil {
		t.Fatal(err)
	}
	c, master := localcluster.StartForTest(t, bin, 3, e2eLease, true)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	client, err := c.Admin(master)
	if err != nil {
		t.Fatal(err)
	}
	a := topology.NewAdmin(ctx, client, 50*time.Millisecond, slog.Default())
	await(t, ctx, "the master's proxy view serving", func() bool { return a.View().LeaseValid(time.Now()) })

	type sample struct{ at, deadline time.Time }
	var last sample // the latest sample at which the view allowed serving, and the latest deadline it showed
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			v, now := a.View(), time.Now()
			if v.LeaseValid(now) {
				last.at = now
				if v.LeaseDeadline.After(last.deadline) {
					last.deadline = v.LeaseDeadline
				}
			}
			time.Sleep(200 * time.Microsecond)
		}
	}()
	to := other(master, 0)
	started := time.Now()
	rep, err := client.Switchover(ctx, &pb.SwitchoverRequest{To: to})
	chosen := time.Now() // the grant was chosen before Switchover returned
	close(stop)
	<-done
	if err != nil {
		t.Fatalf("switchover to %d: %v", to, err)
	}
	t.Logf("switchover %d -> %d (lease version %d) took %v; the proxy view last served at +%v under a deadline at +%v",
		master, to, rep.LeaseVersion, chosen.Sub(started).Round(time.Millisecond),
		last.at.Sub(started).Round(time.Millisecond), last.deadline.Sub(started).Round(time.Millisecond))
	if last.deadline.IsZero() {
		t.Fatal("the view never served during the switchover")
	}
	if !last.deadline.Before(chosen) {
		t.Fatalf("the old master's proxy could serve until %v after the switchover's grant was chosen", last.deadline.Sub(chosen))
	}
	await(t, ctx, "the step-down pushed to the old master's proxy", func() bool {
		v := a.View()
		return !v.IsMaster && !v.LeaseValid(time.Now()) && v.MasterID == to
	})
}
