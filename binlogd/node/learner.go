package node

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"phxgo/paxos"
	pb "phxgo/proto"
)

// Learners (members[].learner, paxos.Member.Learner). A learner runs
// binlogd, MariaDB and sqlproxy like any data node and serves reads as a
// replica, but its binlogd never votes (the engine counts voters only and
// ignores a learner's promises and votes) and it is never master:
//
//   - it never proposes a LeaseRequest for itself (canAcquire is false);
//   - no Switchover or graceful handover names it (leaseTargetError);
//   - like a witness, the masterlease state machine itself cannot refuse
//     a grant naming it (the initial flags come from config files, not
//     the log), so every proposer refuses instead; witness.go explains
//     why a stray grant costs one lease of availability, never data.
//
// Promotion makes it a voter, demotion a learner again: each is one
// membership change through the log (PromoteMember, DemoteMember).

// PromoteMaxLag is how far a learner's applied Paxos index may trail the
// answering node's chosen index for a promotion: two activation
// distances, i.e. it follows the leader's pipeline and needs no
// catch-up fetch to vote well from the first instance it governs.
const PromoteMaxLag = 2 * paxos.Alpha

// learner reports whether this node is a learner now: the log says so
// (the latest configuration, pending included, so a demoted node stops
// asking for the lease as soon as its demotion is chosen), or, before it
// knows the members, its config does.
func (n *Node) learner() bool {
	m, _ := n.px.Membership()
	if m.Members == nil {
		return n.cfg.IsLearner()
	}
	return m.IsLearner(n.cfg.ID)
}

func (a *adminServer) PromoteMember(ctx context.Context, req *pb.PromoteMemberRequest) (*pb.MembersReply, error) {
	n := a.n
	e, ok := n.member(req.Id)
	switch {
	case !ok:
		return nil, status.Errorf(codes.InvalidArgument, "node %d is not a member", req.Id)
	case !e.Learner:
		return nil, status.Errorf(codes.InvalidArgument, "node %d is not a learner", req.Id)
	case len(n.members()) > 64:
		return nil, status.Errorf(codes.InvalidArgument, "at most 64 members")
	}
	if err := a.caughtUp(ctx, req.Id); err != nil {
		return nil, status.Errorf(codes.FailedPrecondition, "node %d is not caught up: %v (retry once it is)", req.Id, err)
	}
	m, err := n.px.PromoteLearner(ctx, req.Id)
	if err != nil {
		return nil, membershipStatus(err)
	}
	if v := m.Voters(); v%2 == 0 {
		n.log.Warn("promoted a learner to an even number of voters: it tolerates no more failures than one voter fewer", "member", req.Id, "voters", v)
	}
	n.log.Info("learner promoted to voter", "member", req.Id, "index", m.Index, "active", m.Active)
	return membersReply(m, false, n.members()), nil
}

func (a *adminServer) DemoteMember(ctx context.Context, req *pb.DemoteMemberRequest) (*pb.MembersReply, error) {
	n := a.n
	e, ok := n.member(req.Id)
	switch {
	case !ok:
		return nil, status.Errorf(codes.InvalidArgument, "node %d is not a member", req.Id)
	case e.Learner:
		return nil, status.Errorf(codes.InvalidArgument, "node %d is already a learner", req.Id)
	case e.Witness:
		return nil, status.Errorf(codes.InvalidArgument, "node %d is a witness: it runs no MariaDB, so as a learner it would serve nothing; remove it instead", req.Id)
	}
	dataVoters := 0
	for _, m := range n.members() {
		if m.ID != req.Id && !m.Learner && !m.Witness {
			dataVoters++
		}
	}
	if dataVoters == 0 {
		return nil, status.Errorf(codes.InvalidArgument, "node %d is the last voter that runs MariaDB: nobody could be master", req.Id)
	}
	if st := n.lease.State(); st.Master == req.Id {
		return nil, status.Errorf(codes.FailedPrecondition, "node %d is the master: switch over to another node first (binlogd switchover)", req.Id)
	}
	m, err := n.px.DemoteVoter(ctx, req.Id)
	if err != nil {
		return nil, membershipStatus(err)
	}
	n.log.Info("voter demoted to learner", "member", req.Id, "index", m.Index, "active", m.Active)
	return membersReply(m, false, n.members()), nil
}

// caughtUp checks that learner id follows the log closely enough to be
// promoted: its applied index within PromoteMaxLag of this node's chosen
// index, and its MariaDB up.
func (a *adminServer) caughtUp(ctx context.Context, id uint32) error {
	n := a.n
	var st *pb.NodeStatus
	if id == n.cfg.ID {
		st = n.Status()
	} else {
		cl, err := n.peerAdmin(id)
		if err != nil {
			return err
		}
		qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		st, err = cl.Status(qctx, &pb.StatusRequest{})
		cancel()
		if err != nil {
			return fmt.Errorf("its status: %w", err)
		}
	}
	chosen := n.px.Status().Chosen
	if st.AppliedIndex+PromoteMaxLag < chosen {
		return fmt.Errorf("applied log index %d, %d behind this node's chosen %d (at most %d)", st.AppliedIndex, chosen-st.AppliedIndex, chosen, PromoteMaxLag)
	}
	if !st.MysqlUp {
		return fmt.Errorf("its MariaDB is down")
	}
	if st.Role == pb.Role_ROLE_UNSAFE {
		return fmt.Errorf("it is UNSAFE: %s", st.UnsafeReason)
	}
	return nil
}

// demotedMasterLoop hands the lease over when this node holds it while
// the log makes it a learner. DemoteMember refuses the master, but a
// failover can make a node master between that check and the demotion
// being chosen, and the holder renews without asking canAcquire: so the
// holder itself gives the lease up, through the same switchover a
// graceful stop uses (to the most caught-up voter), or fences its term
// if there is none. Writes pause for about one switchover.
func (n *Node) demotedMasterLoop(ctx context.Context) {
	every(ctx, time.Second, func() {
		if !n.learner() || n.lease.State().Master != n.cfg.ID {
			return
		}
		lease := n.cfg.LeaseDuration.Duration
		sctx, cancel := context.WithTimeout(ctx, 2*lease)
		defer cancel()
		to, err := n.handoverTarget(sctx)
		if err == nil {
			n.log.Warn("this node is a learner but holds the master lease: switching over", "to", to)
			_, err = (&adminServer{n: n}).Switchover(sctx, &pb.SwitchoverRequest{To: to})
		}
		if err != nil {
			n.log.Warn("this node is a learner but holds the master lease and cannot switch over: fencing its term", "err", err)
			n.fenceIfHolder()
		}
	})
}
