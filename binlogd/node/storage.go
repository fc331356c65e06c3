package node

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc/health"
)

// Storage failure: a wal write, fsync or apply error (a failing disk, a
// full filesystem) stops the Paxos node at once (paxos.ErrStorage): what
// is on disk is unknown, and an acceptor that went on from memory could
// forget a promise. binlogd then takes the whole node out of service, so
// it never looks healthy while it cannot keep a vote:
//
//   - gRPC health NOT_SERVING for "" and "phxgo.binlogd"; /healthz 503
//     with the reason; Status role UNSAFE with "storage failed: …"
//     (binlogd status prints it); phxgo_binlogd_storage_failed 1;
//   - the lease loop stops: no LeaseRequest, no renewal (the stopped Paxos
//     node could not carry them anyway); the node never asks again;
//   - a master steps down at once: read_only on, capture stopped, and
//     mariadbd SIGKILLed if commits wait for an ACK (a graceful shutdown
//     would commit them in InnoDB); a replica's MariaDB stays up read-only.
//     The lease expires on the other members, which elect a new master.
//
// The process stays up, unhealthy, until the operator restarts it; it
// does not exit. Why: the reason stays visible where probes and people
// look (health, /healthz, status, metrics) instead of only in a log; a
// supervisor restarting it in a loop on a disk that is still bad would
// make the node rejoin, vote and fail again (and each Open replays and
// syncs the wal on that disk). After fixing the disk, restart binlogd: Open
// recovers what the wal made durable (a torn tail is cut; damage is
// refused, see binlogd wal-repair). An orchestrator that wants restarts
// can act on /healthz.

// watchStorage takes the node out of service once the Paxos node stops on
// its own (see above). stopLease ends the lease loop.
func (n *Node) watchStorage(ctx context.Context, hs *health.Server, stopLease context.CancelFunc) {
	n.m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "phxgo", Subsystem: "binlogd", Name: "storage_failed",
		Help: "1 once the Paxos log's storage failed (write, fsync, full disk): the node is out of service until restarted"},
		func() float64 {
			if n.px.Err() != nil {
				return 1
			}
			return 0
		}))
	go func() {
		select {
		case <-ctx.Done():
			return
		case <-n.px.Done():
		}
		err := n.px.Err()
		if err == nil {
			return // stopped by Stop, not by a failure
		}
		reason := "storage failed: " + err.Error()
		hs.Shutdown() // NOT_SERVING, and stays so
		stopLease()
		n.setUnsafe(reason)
		n.stepDown(ctx, reason)
		n.log.Error("out of service until restarted: fix the disk, then restart binlogd", "reason", reason)
	}()
}
