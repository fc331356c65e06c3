package topology

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	pb "phxgo/proto"
)

// fakeBinlogd is a real gRPC Admin server on loopback whose status and
// read windows the test sets.
type fakeBinlogd struct {
	pb.UnimplementedAdminServer
	noWatch bool          // answer WatchStatus with Unimplemented, like an older binlogd
	cut     chan struct{} // closed: the open streams fail (only the first stream watches it)

	mu      sync.Mutex
	st      *pb.NodeStatus
	changed chan struct{} // closed when st changes
	window  func() (*pb.ReadWindowReply, error)

	streams, polls atomic.Int64
}

func (f *fakeBinlogd) set(st *pb.NodeStatus) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.st = st
	close(f.changed)
	f.changed = make(chan struct{})
}

func (f *fakeBinlogd) get() (*pb.NodeStatus, <-chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.st, f.changed
}

func (f *fakeBinlogd) Status(context.Context, *pb.StatusRequest) (*pb.NodeStatus, error) {
	f.polls.Add(1)
	st, _ := f.get()
	return st, nil
}

func (f *fakeBinlogd) WatchStatus(_ *pb.WatchStatusRequest, stream pb.Admin_WatchStatusServer) error {
	if f.noWatch {
		return status.Error(codes.Unimplemented, "no WatchStatus here")
	}
	var cut chan struct{}
	if f.streams.Add(1) == 1 {
		cut = f.cut
	}
	for {
		st, changed := f.get()
		if err := stream.Send(st); err != nil {
			return err
		}
		select {
		case <-stream.Context().Done():
			return nil
		case <-cut:
			return status.Error(codes.Unavailable, "cut")
		case <-changed:
		}
	}
}

func (f *fakeBinlogd) ReadWindow(context.Context, *pb.ReadWindowRequest) (*pb.ReadWindowReply, error) {
	f.mu.Lock()
	w := f.window
	f.mu.Unlock()
	if w == nil {
		return nil, status.Error(codes.Unavailable, "no window")
	}
	return w()
}

func (f *fakeBinlogd) setWindow(w func() (*pb.ReadWindowReply, error)) {
	f.mu.Lock()
	f.window = w
	f.mu.Unlock()
}

func startFake(t *testing.T, f *fakeBinlogd) pb.AdminClient {
	t.Helper()
	if f.changed == nil {
		f.changed = make(chan struct{})
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	pb.RegisterAdminServer(srv, f)
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	cc, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return pb.NewAdminClient(cc)
}

var members = []*pb.Member{
	{Id: 1, MysqlAddr: "127.0.0.1:1001", ProxyAddr: "127.0.0.1:2001"},
	{Id: 2, MysqlAddr: "127.0.0.1:1002", ProxyAddr: "127.0.0.1:2002"},
}

// A status that says master with a long lease left, as binlogd's does.
func masterStatus() *pb.NodeStatus {
	return &pb.NodeStatus{NodeId: 1, MasterId: 1, Role: pb.Role_ROLE_MASTER, Ready: true, Epoch: 3,
		LeaseRemainingNs: int64(time.Hour), Members: members}
}

func selfWindow() (*pb.ReadWindowReply, error) {
	return &pb.ReadWindowReply{MasterId: 1, Epoch: 3, MysqlAddr: "127.0.0.1:1001",
		RemainingNs: int64(400 * time.Millisecond), DriftMarginNs: int64(100 * time.Millisecond)}, nil
}

func awaitView(t *testing.T, a *Admin, what string, cond func(View) bool) View {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for {
		ch := a.Changed()
		if v := a.View(); cond(v) {
			return v
		}
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s; view %+v", what, a.View())
		case <-ch:
		case <-time.After(10 * time.Millisecond): // a deadline passes without a change
		}
	}
}

// The master node's proxy serves only under the window its binlogd
// granted it, never on the lease a status reports: with no window it does
// not serve, its deadline is the window's (t0 + granted - margin), and
// when windows stop being granted it stops serving although every status
// still says master with an hour left.
func TestAdminMasterServesOnlyUnderItsWindow(t *testing.T) {
	f := &fakeBinlogd{st: masterStatus()}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a := NewAdmin(ctx, startFake(t, f), 20*time.Millisecond, nil)
	awaitView(t, a, "master view", func(v View) bool { return v.IsMaster })
	if v := a.View(); v.LeaseValid(time.Now()) {
		t.Fatalf("serving without a window: deadline %v", v.LeaseDeadline)
	}

	asked := time.Now()
	f.setWindow(selfWindow)
	v := awaitView(t, a, "a lease from the window", func(v View) bool { return v.LeaseValid(time.Now()) })
	if limit := time.Now().Add(300 * time.Millisecond); v.LeaseDeadline.After(limit) {
		t.Fatalf("deadline %v after now + 400ms - 100ms: not from the window", time.Until(v.LeaseDeadline))
	}
	if v.LeaseDeadline.Before(asked) {
		t.Fatalf("deadline %v before the window was asked for", v.LeaseDeadline)
	}
	// It renews: still serving after several windows' length.
	renewedPast := time.Now().Add(time.Second)
	awaitView(t, a, "renewed windows", func(v View) bool { return v.LeaseValid(time.Now()) && v.LeaseDeadline.After(renewedPast) })

	f.setWindow(nil)
	stopped := time.Now()
	v = awaitView(t, a, "the window running out", func(v View) bool { return !v.LeaseValid(time.Now()) })
	if !v.IsMaster {
		t.Fatal("the status changed; the test wanted only the window to end")
	}
	if v.LeaseDeadline.After(stopped.Add(300 * time.Millisecond)) {
		t.Fatalf("the last deadline %v outlived the last window", v.LeaseDeadline.Sub(stopped))
	}
}

// A step-down is pushed: the view stops serving at once, before the window
// it holds has run out (the window alone would keep it safe, the push
// makes it prompt).
func TestAdminStepDownIsPushed(t *testing.T) {
	f := &fakeBinlogd{st: masterStatus()}
	f.setWindow(func() (*pb.ReadWindowReply, error) {
		r, _ := selfWindow()
		r.RemainingNs = int64(time.Hour) // a long window: only the push can end it early
		return r, nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a := NewAdmin(ctx, startFake(t, f), 20*time.Millisecond, nil)
	awaitView(t, a, "serving", func(v View) bool { return v.LeaseValid(time.Now()) })

	down := masterStatus()
	down.Role, down.Ready, down.LeaseRemainingNs = pb.Role_ROLE_REPLICA, false, 0
	f.set(down)
	v := awaitView(t, a, "the step-down", func(v View) bool { return !v.IsMaster })
	if v.LeaseValid(time.Now()) {
		t.Fatal("serving after the step-down was pushed")
	}
	if f.polls.Load() != 0 {
		t.Fatalf("%d Status polls beside the stream", f.polls.Load())
	}
}

// A broken stream is opened again, and the statuses on the new one apply.
func TestAdminReopensStream(t *testing.T) {
	f := &fakeBinlogd{st: masterStatus(), cut: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a := NewAdmin(ctx, startFake(t, f), 20*time.Millisecond, nil)
	awaitView(t, a, "master view", func(v View) bool { return v.IsMaster })

	replica := masterStatus()
	replica.MasterId, replica.Role, replica.LeaseRemainingNs = 2, pb.Role_ROLE_REPLICA, 0
	f.mu.Lock()
	f.st = replica // not pushed on the old stream: only a new one shows it
	f.mu.Unlock()
	close(f.cut)
	awaitView(t, a, "master 2 on a new stream", func(v View) bool { return v.MasterID == 2 && !v.IsMaster })
	if n := f.streams.Load(); n < 2 {
		t.Fatalf("%d streams", n)
	}
}

// A binlogd without WatchStatus is polled.
func TestAdminPollsOlderBinlogd(t *testing.T) {
	f := &fakeBinlogd{st: masterStatus(), noWatch: true}
	f.setWindow(selfWindow)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a := NewAdmin(ctx, startFake(t, f), 20*time.Millisecond, nil)
	awaitView(t, a, "serving from polls", func(v View) bool { return v.LeaseValid(time.Now()) })
	other := masterStatus()
	other.MasterId, other.Role, other.LeaseRemainingNs = 2, pb.Role_ROLE_REPLICA, 0
	f.set(other)
	awaitView(t, a, "master 2 from polls", func(v View) bool { return v.MasterID == 2 })
	if f.polls.Load() < 2 {
		t.Fatalf("%d polls", f.polls.Load())
	}
}
