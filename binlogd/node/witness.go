package node

import (
	"context"
	"fmt"
	"time"

	"phxgo/binlogd/binlog"
	"phxgo/binlogd/config"
	"phxgo/masterlease"
	pb "phxgo/proto"
)

// Witnesses (config members[].witness). A witness's binlogd stores and
// votes on the Paxos log and serves Status, WatchStatus and Events, and
// nothing else: no MariaDB, capture, replication endpoint or role
// controller. It never becomes master:
//
//   - it never proposes a LeaseRequest for itself (canAcquire is false);
//   - no master names it in a Switchover (Admin Switchover refuses, the
//     graceful stop's handover skips it): leaseTargetError;
//   - the masterlease state machine cannot refuse a grant naming it:
//     membership lives in the Paxos engine, not in the entries Step sees,
//     and the initial members' witness flags come from the config files,
//     which the log does not hold, so a Step that consulted them would not
//     be a function of the log alone. Every proposer refuses instead.
//
// Why that is safe even if a grant named a witness anyway (an old binary,
// a hand-made entry): a batch is valid only in the current epoch and on
// the chain, and a witness proposes none, so no write is lost or forked;
// it cannot renew a lease it did not propose (masterlease counts a grant
// only from this process's own proposal) and canAcquire stops it asking
// for a new term, so the data nodes take over one lease after the grant.
// The cost is availability for that one lease, never data.
//
// Compaction: a witness keeps the log only for the data nodes; its
// retention counts their durable positions alone (retention.go), and in
// place of "this node's MariaDB" uses the most advanced data node's.

// isWitness reports whether member id is a witness: its entry in the log
// (or the config, for initial members) says so.
func (n *Node) isWitness(id uint32) bool {
	if m, ok := n.member(id); ok && m.Witness {
		return true
	}
	return id == n.cfg.ID && n.cfg.IsWitness()
}

// witness reports whether this node is a witness.
func (n *Node) witness() bool { return n.isWitness(n.cfg.ID) }

// leaseTargetError says why member to may not be given the lease by a
// switchover or handover, or nil. members is the current membership.
func leaseTargetError(members []config.Member, self, to uint32) error {
	if to == self {
		return fmt.Errorf("node %d is this node", to)
	}
	for _, m := range members {
		if m.ID != to {
			continue
		}
		if m.Witness {
			return fmt.Errorf("node %d is a witness: it runs no MariaDB and can never be master", to)
		}
		if m.Learner {
			return fmt.Errorf("node %d is a learner: it never votes and can never be master (binlogd members promote first)", to)
		}
		return nil
	}
	return fmt.Errorf("node %d is not a member", to)
}

// witnessLoop is a witness's role loop: it follows the lease for the
// metrics, the event stream and the status push, and carries out
// nothing, since there is no MariaDB to switch. Like roleLoop it waits
// for the lease's notifications, looking again when its own deadline
// passes (a witness never holds one) or every lease RetryInterval.
func (n *Node) witnessLoop(ctx context.Context) {
	ch, cancel := n.lease.Watch()
	defer cancel()
	t := time.NewTimer(0)
	defer t.Stop()
	go n.watchEvents(ctx)
	recheck := n.lease.Config().RetryInterval
	for {
		var st masterlease.Status
		select {
		case <-ctx.Done():
			return
		case st = <-ch:
		case <-t.C:
			st = n.lease.Status()
		}
		n.m.observe(st)
		n.noteLease(st)
		t.Reset(nextLook(st.Deadline, time.Now(), recheck))
	}
}

// witnessStatus turns a status into a witness's: its role says so and it
// reports no MariaDB.
func witnessStatus(st *pb.NodeStatus) {
	if st.Role != pb.Role_ROLE_UNSAFE {
		st.Role, st.Ready = pb.Role_ROLE_WITNESS, false
	}
	st.ReplicationState = "witness: no MariaDB"
	st.MysqlGtidPos, st.MysqlDurableGtidPos = "", ""
	st.LagTransactions, st.LagSeconds = 0, -1
}

// dataNodesDurable is, for a witness's retention, the most advanced
// durable position among the data nodes' MariaDBs: the witness's log
// need not be kept past what every data node applied, and when over its
// byte limit it compacts no further than the most advanced one. ok is
// false when no data node answered.
func (r *retention) dataNodesDurable(ctx context.Context) (high binlog.GTID, ok bool) {
	n := r.n
	for _, m := range n.members() {
		if m.ID == n.cfg.ID || m.Witness {
			continue
		}
		g, err := r.peerDurable(ctx, m.ID)
		if err != nil {
			continue
		}
		if !ok || g.Domain == high.Domain && g.Seq > high.Seq {
			high, ok = g, true
		}
	}
	return high, ok
}
