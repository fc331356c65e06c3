package node

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/grpc"

	"phxgo/binlogd/binlog"
	"phxgo/binlogd/capture"
	"phxgo/masterlease"
	"phxgo/paxos"
)

type sinkNode struct {
	lease *masterlease.Lease
	px    *paxos.Node
}

// startLeaseCluster starts three real paxos.Nodes (wal on disk, gRPC on
// loopback) running masterlease, and returns them once one holds the
// lease.
func startLeaseCluster(t *testing.T) (nodes map[uint32]*sinkNode, master *sinkNode) {
	t.Helper()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	lcfg := masterlease.Config{LeaseDuration: 10 * time.Second, DriftMargin: 100 * time.Millisecond,
		RenewInterval: 2 * time.Second, RetryInterval: 50 * time.Millisecond} // long: the machine may be loaded
	peers := map[uint32]string{}
	lis := map[uint32]net.Listener{}
	for id := uint32(1); id <= 3; id++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lis[id], peers[id] = l, l.Addr().String()
	}
	nodes = map[uint32]*sinkNode{}
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
		done := make(chan struct{})
		go func() { defer close(done); _ = lease.Run(ctx, nil) }()
		t.Cleanup(func() { cancel(); <-done; srv.Stop(); px.Stop() })
		nodes[id] = &sinkNode{lease: lease, px: px}
	}
	for end := time.Now().Add(30 * time.Second); master == nil; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("no master within 30s")
		}
		for _, n := range nodes {
			if n.lease.Ready() {
				master = n
			}
		}
	}
	return nodes, master
}

// TestSinkKeepsStreamOrder: capture's use of the sink, against real
// Paxos and masterlease: 300 batches proposed back to back from one
// goroutine, up to 64 of them in flight, their outcomes awaited in order
// from another. Every batch is valid, none is rejected for a broken
// chain (so none is proposed twice), and the log's last valid GTID is
// the last one sent. It runs with the master leading the Paxos log, and
// with another node leading (the master's batches are forwarded).
func TestSinkKeepsStreamOrder(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three Paxos nodes")
	}
	nodes, m := startLeaseCluster(t)
	for _, leader := range []string{"master", "other"} {
		t.Run("leader="+leader, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			lead := m
			if leader == "other" {
				for _, n := range nodes {
					if n != m {
						lead = n
						break
					}
				}
			}
			if err := lead.px.Campaign(ctx); err != nil {
				t.Fatal(err)
			}
			// ProposeAsync's order holds for a follower once it follows
			// the new leader (paxos/api.go); before its first heartbeat
			// arrives, forwards may go to the old leader and be re-sent.
			for m.px.Status().Leader != lead.lease.ID() {
				if ctx.Err() != nil {
					t.Fatalf("node %d never learned leader %d", m.lease.ID(), lead.lease.ID())
				}
				time.Sleep(5 * time.Millisecond)
			}
			if m.lease.Status().State.Master != m.lease.ID() {
				t.Skip("the lease moved while the Paxos leader changed")
			}
			st := m.lease.State()
			rejected := prometheus.NewCounter(prometheus.CounterOpts{Name: "rejected"})
			sink := newSink(m.lease, queueOn(m.px), st.Epoch, entryEventBytes, rejected, slog.New(slog.NewTextHandler(io.Discard, nil)))

			prev := binlog.GTID(st.LastGTID)
			server := m.lease.ID()
			if !prev.IsZero() {
				server = prev.Server
			}
			seq := prev.Seq
			const batches = 300
			queued := make(chan capture.Pending, 64)
			waitErr := make(chan error, 1)
			go func() { // capture's waiter: outcomes in order
				for i := 0; i < batches; i++ {
					if err := (<-queued).Wait(ctx); err != nil {
						waitErr <- fmt.Errorf("batch %d: %w", i+1, err)
						return
					}
				}
				waitErr <- nil
			}()
			for i := 1; i <= batches; i++ {
				var txns []binlog.Txn
				for k := 0; k <= i%4; k++ {
					seq++
					txns = append(txns, binlog.Txn{GTID: binlog.GTID{Server: server, Seq: seq}, Events: []byte(fmt.Sprintf("txn %d", seq))})
				}
				p, err := sink.Propose(ctx, capture.BatchInfo{Seq: uint64(i), Prev: prev}, txns)
				if err != nil {
					t.Fatalf("propose batch %d: %v", i, err)
				}
				queued <- p
				prev = txns[len(txns)-1].GTID
			}
			if err := <-waitErr; err != nil {
				t.Fatal(err)
			}
			var cm dto.Metric
			if err := rejected.Write(&cm); err != nil {
				t.Fatal(err)
			}
			if n := cm.GetCounter().GetValue(); n != 0 {
				t.Fatalf("%v batches rejected, want 0", n)
			}
			if got := binlog.GTID(m.lease.State().LastGTID); got != prev {
				t.Fatalf("log's last valid GTID %v, want %v", got, prev)
			}
		})
	}
}
