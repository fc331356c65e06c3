package node

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"phxgo/binlogd/binlog"
	"phxgo/binlogd/config"
	"phxgo/binlogd/mysqld"
	"phxgo/binlogd/role"
	"phxgo/binlogd/rolectl"
	pb "phxgo/proto"
)

// A graceful stop (SIGTERM) of the master hands over first (issue 23.3):
//
//  1. pick the member whose MariaDB is furthest along (caught up, if any
//     is), not UNSAFE, MariaDB up;
//  2. switch over to it through the Admin Switchover path (admin.go):
//     read_only on, waiting commits acknowledged (they get their result;
//     new ones get 1290 read-only, an error the client sees), the target
//     caught up, the lease granted to it, this node stepped down;
//  3. wait, at most two lease durations in all, until the target says it
//     is a ready master;
//  4. stop as a replica: with KeepMySQLOnStop, MariaDB is handed off
//     (adopt.go), not stopped; without, it stops gracefully (nothing
//     waits any more).
//
// With no quorum, no eligible replica, commits that do not drain or a
// switchover that fails, the stop falls back to what it did before: fence
// the term (if this node still holds it) and stop MariaDB, gracefully only
// when nothing waits (rolectl). A commit waiting then is killed with
// mariadbd: its client gets an error, and recovery cuts it.

// handOver runs steps 1-3 when this node is the master; it reports
// whether this node's MariaDB may be left running (handed off).
func (n *Node) handOver() bool {
	keep := n.keepMySQL.Load() && n.cfg.SuperviseMySQL
	if !n.lease.Ready() && !n.serving() {
		return keep // a replica: hand MariaDB off as it is
	}
	lease := n.cfg.LeaseDuration.Duration
	ctx, cancel := context.WithTimeout(context.Background(), 2*lease)
	defer cancel()
	to, err := n.handoverTarget(ctx)
	if err != nil {
		n.log.Warn("graceful stop: no replica to hand over to; fencing the term and stopping MariaDB", "err", err)
		return false
	}
	n.log.Info("graceful stop: handing the master over before stopping", "to", to)
	_, err = (&adminServer{n: n}).Switchover(ctx, &pb.SwitchoverRequest{To: to})
	if err != nil {
		n.log.Warn("graceful stop: switchover failed; fencing the term and stopping MariaDB", "to", to, "err", err)
		n.fenceIfHolder()
		return false
	}
	if err := n.awaitMaster(ctx, to); err != nil {
		// The lease is the target's in the log; if it cannot serve, the
		// cluster elects another master as after any failure.
		n.log.Warn("graceful stop: the new master is not serving yet; stopping anyway", "to", to, "err", err)
	} else {
		n.log.Info("graceful stop: handed over", "to", to)
	}
	return keep
}

// KeepMySQLOnStop makes a graceful stop leave MariaDB running, a
// read-only replica, for the next binlogd to adopt (`binlogd run
// -keep-mysql`, which the systemd unit passes): a restart then restarts
// binlogd alone. Without it MariaDB stops with binlogd, as `binlogd
// stop-mysql` would stop it.
func (n *Node) KeepMySQLOnStop(on bool) { n.keepMySQL.Store(on) }

// handoverTarget asks every other member for its status and picks the one
// whose MariaDB applied the most of the log (ties: the lowest id).
func (n *Node) handoverTarget(ctx context.Context) (uint32, error) {
	var best uint32
	var bestSeq uint64
	var why []error
	for _, m := range n.members() {
		if leaseTargetError(n.members(), n.cfg.ID, m.ID) != nil { // this node, or a witness (witness.go)
			continue
		}
		cl, err := n.peerAdmin(m.ID)
		if err != nil {
			why = append(why, fmt.Errorf("node %d: %w", m.ID, err))
			continue
		}
		sctx, cancel := context.WithTimeout(ctx, time.Second)
		st, err := cl.Status(sctx, &pb.StatusRequest{})
		serving := n.peerServing(sctx, m)
		cancel()
		switch {
		case err != nil:
			why = append(why, fmt.Errorf("node %d: %w", m.ID, err))
			continue
		case !serving:
			// Stopping too (a whole cluster stopped at once): it would
			// never take the lease.
			why = append(why, fmt.Errorf("node %d: not serving (stopping)", m.ID))
			continue
		case st.Role == pb.Role_ROLE_UNSAFE || st.ReseedNeeded:
			why = append(why, fmt.Errorf("node %d: unsafe or needs a reseed", m.ID))
			continue
		case st.ReplicationState == "MariaDB down":
			why = append(why, fmt.Errorf("node %d: MariaDB down", m.ID))
			continue
		}
		g, err := binlog.ParseGTID(st.MysqlGtidPos)
		if err != nil && st.MysqlGtidPos != "" {
			why = append(why, fmt.Errorf("node %d: gtid %q: %w", m.ID, st.MysqlGtidPos, err))
			continue
		}
		if best == 0 || g.Seq > bestSeq {
			best, bestSeq = m.ID, g.Seq
		}
	}
	if best == 0 {
		return 0, fmt.Errorf("no eligible member: %w", errors.Join(why...))
	}
	return best, nil
}

// peerServing asks member m's gRPC health service whether its binlogd
// serves (NOT_SERVING once it stops: health.go).
func (n *Node) peerServing(ctx context.Context, m config.Member) bool {
	cc, ok := peerConns.Load(peerKey(m))
	if !ok {
		return false
	}
	r, err := healthpb.NewHealthClient(cc.(*grpc.ClientConn)).Check(ctx, &healthpb.HealthCheckRequest{Service: HealthService})
	return err == nil && r.Status == healthpb.HealthCheckResponse_SERVING
}

// awaitMaster waits until node to reports itself a ready master.
func (n *Node) awaitMaster(ctx context.Context, to uint32) error {
	cl, err := n.peerAdmin(to)
	if err != nil {
		return err
	}
	for {
		sctx, cancel := context.WithTimeout(ctx, time.Second)
		st, err := cl.Status(sctx, &pb.StatusRequest{})
		cancel()
		if err == nil && st.Role == pb.Role_ROLE_MASTER && st.Ready && st.NodeId == to {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last status %v, %v)", ctx.Err(), st, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// fenceIfHolder ends this node's term if the log still says it holds it
// (a switchover whose grant was not chosen).
func (n *Node) fenceIfHolder() {
	if n.lease.State().Master != n.cfg.ID {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), rolectl.FenceTimeout)
	defer cancel()
	if _, err := n.lease.Fence(ctx); err != nil {
		n.log.Warn("graceful stop: fence after a failed switchover", "err", err)
	}
}

// handoff leaves MariaDB running for the next binlogd: a read-only replica
// of this node's endpoint (it reconnects when the next binlogd serves),
// and a durable record of which process and server it is (adopt.go).
func (n *Node) handoff(ctx context.Context, db *sql.DB) error {
	if db == nil {
		return errNoMySQL
	}
	qctx, cancel := context.WithTimeout(ctx, rolectl.PromoteTimeout)
	defer cancel()
	if err := role.BecomeReplica(qctx, db, n.upstream()); err != nil {
		return err
	}
	h, err := n.inst.Handoff(qctx, db)
	if err != nil {
		return err
	}
	if err := mysqld.SaveHandoff(n.handoffFile(), h); err != nil {
		return err
	}
	n.log.Info("left mariadbd running, read-only, for the next binlogd to adopt", "pid", h.Pid, "gtid_current_pos", h.GTIDPos)
	return nil
}
