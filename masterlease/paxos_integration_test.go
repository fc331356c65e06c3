package masterlease_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"

	"phxgo/masterlease"
	"phxgo/paxos"
)

var _ masterlease.Log = (*paxos.Node)(nil)

type realNode struct {
	lease  *masterlease.Lease
	px     *paxos.Node
	srv    *grpc.Server
	cancel context.CancelFunc
	done   chan struct{}
}

func (n *realNode) stop() {
	n.cancel()
	<-n.done
	n.srv.Stop()
	n.px.Stop()
}

// TestOnRealPaxos runs masterlease on three real paxos.Nodes (real wal,
// real gRPC on loopback): a master is elected and renews; when the
// master's node stops, another takes over and the batch chain continues.
func TestOnRealPaxos(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three Paxos nodes")
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	lcfg := masterlease.Config{LeaseDuration: time.Second, DriftMargin: 100 * time.Millisecond,
		RenewInterval: 300 * time.Millisecond, RetryInterval: 50 * time.Millisecond}
	peers := map[uint32]string{}
	lis := map[uint32]net.Listener{}
	for id := uint32(1); id <= 3; id++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lis[id], peers[id] = l, l.Addr().String()
	}
	nodes := map[uint32]*realNode{}
	for id := uint32(1); id <= 3; id++ {
		lease, err := masterlease.New(lcfg, id, nil, quiet)
		if err != nil {
			t.Fatal(err)
		}
		pcfg := paxos.DefaultConfig()
		pcfg.ID, pcfg.Peers, pcfg.Dir, pcfg.Logger = id, peers, t.TempDir(), quiet
		pcfg.HeartbeatInterval, pcfg.ElectionTimeout = 20*time.Millisecond, 200*time.Millisecond
		px, err := paxos.Start(pcfg, lease)
		if err != nil {
			t.Fatal(err)
		}
		lease.Attach(px)
		lease.MarkCaughtUp(1 << 40) // no MariaDB here: always caught up
		srv := grpc.NewServer(paxos.GRPCServerOptions(pcfg)...)
		px.RegisterGRPC(srv)
		go func(l net.Listener) { _ = srv.Serve(l) }(lis[id])
		ctx, cancel := context.WithCancel(context.Background())
		n := &realNode{lease: lease, px: px, srv: srv, cancel: cancel, done: make(chan struct{})}
		go func() { defer close(n.done); _ = lease.Run(ctx, nil) }()
		nodes[id] = n
	}
	var stopOnce sync.Map
	t.Cleanup(func() {
		for id, n := range nodes {
			if _, done := stopOnce.LoadOrStore(id, true); !done {
				n.stop()
			}
		}
	})
	await := func(what string, cond func() bool) {
		t.Helper()
		for end := time.Now().Add(30 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(end) {
				t.Fatalf("timed out waiting for %s", what)
			}
		}
	}
	ready := func(skip uint32) *realNode {
		for id, n := range nodes {
			if id != skip && n.lease.Ready() {
				return n
			}
		}
		return nil
	}
	var m *realNode
	await("a master", func() bool { m = ready(0); return m != nil })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	st := m.lease.Status()
	v, err := m.lease.ProposeBatch(ctx, masterlease.Batch{Epoch: st.State.Epoch,
		Last: masterlease.GTID{Server: m.lease.ID(), Seq: 1}, Events: []byte("txn 1"), TxnCount: 1})
	if err != nil || !v.Valid {
		t.Fatalf("batch: %+v %v", v, err)
	}
	// Renewals keep the term.
	await("renewals", func() bool { _, ver, _ := m.lease.Master(); return ver >= st.State.Version+3 })
	if _, _, e := m.lease.Master(); e != st.State.Epoch {
		t.Fatalf("epoch moved from %d to %d while renewing", st.State.Epoch, e)
	}
	for _, n := range nodes {
		n := n
		await("every node to see the master", func() bool { mm, _, _ := n.lease.Master(); return mm == m.lease.ID() })
	}

	old := m.lease.ID()
	stopOnce.Store(old, true)
	m.stop()
	var nm *realNode
	await("failover", func() bool { nm = ready(old); return nm != nil })
	st2 := nm.lease.Status()
	if st2.State.Epoch <= st.State.Epoch || st2.State.LastGTID != (masterlease.GTID{Server: old, Seq: 1}) {
		t.Fatalf("after failover %v", st2.State)
	}
	v, err = nm.lease.ProposeBatch(ctx, masterlease.Batch{Epoch: st2.State.Epoch, Prev: st2.State.LastGTID,
		Last: masterlease.GTID{Server: nm.lease.ID(), Seq: 2}, Events: []byte("txn 2"), TxnCount: 1})
	if err != nil || !v.Valid {
		t.Fatalf("new master's batch: %+v %v", v, err)
	}
	// A batch of the old term is rejected by every node the same way.
	stale := masterlease.EncodeBatch(masterlease.Batch{Epoch: st.State.Epoch, Prev: v.State.LastGTID,
		Last: masterlease.GTID{Server: old, Seq: 3}, Events: []byte("late"), TxnCount: 1})
	_, res, err := nm.px.Propose(ctx, stale)
	if err != nil || res.(masterlease.Verdict).Reason != masterlease.ReasonStaleEpoch {
		t.Fatalf("stale batch: %+v %v", res, err)
	}
}
