package node

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"phxgo/binlogd/binlog"
	"phxgo/binlogd/events"
	"phxgo/binlogd/role"
	"phxgo/binlogd/rolectl"
	"phxgo/masterlease"
	pb "phxgo/proto"
)

// adminServer is binlogd's Admin gRPC service (proto/admin.proto).
type adminServer struct {
	pb.UnimplementedAdminServer
	n *Node
}

func (a *adminServer) Status(ctx context.Context, _ *pb.StatusRequest) (*pb.NodeStatus, error) {
	return a.n.Status(), nil
}

// Status is this node's view, as the Admin service and `binlogd status`
// report it.
func (n *Node) Status() *pb.NodeStatus {
	ls := n.lease.Status()
	ps := n.px.Status()
	st := &pb.NodeStatus{
		NodeId:        n.cfg.ID,
		MasterId:      ls.State.Master,
		LeaseVersion:  ls.State.Version,
		Epoch:         ls.State.Epoch,
		Ready:         ls.Ready,
		ChosenIndex:   ps.Chosen,
		AppliedIndex:  ps.Applied,
		LastValidGtid: binlog.GTID(ls.State.LastGTID).String(),
		MysqlGtidPos:  n.applied.Load().String(),
		// "0-0-0" when not known yet: retention then keeps everything.
		MysqlDurableGtidPos: n.durableString(),
		PaxosLeader:         ps.Leader,
	}
	now := time.Now()
	switch ls.Role {
	case masterlease.RoleMaster:
		st.Role = pb.Role_ROLE_MASTER
	case masterlease.RoleCandidate:
		st.Role = pb.Role_ROLE_CANDIDATE
	default:
		st.Role = pb.Role_ROLE_REPLICA
	}
	if st.Role == pb.Role_ROLE_MASTER && !n.serving() {
		st.Role, st.Ready = pb.Role_ROLE_CANDIDATE, false // lease ready, MariaDB not switched yet
	}
	if !ls.Deadline.IsZero() && st.Ready {
		st.LeaseRemainingNs = int64(ls.Deadline.Sub(now))
	} else if !ls.FollowerExpiry.IsZero() && ls.FollowerExpiry.After(now) {
		st.LeaseRemainingNs = int64(ls.FollowerExpiry.Sub(now))
	}
	if st.LeaseRemainingNs < 0 {
		st.LeaseRemainingNs = 0
	}
	if r := n.unsafe.Load(); r != nil {
		st.Role, st.UnsafeReason, st.Ready, st.LeaseRemainingNs = pb.Role_ROLE_UNSAFE, *r, false, 0
	}
	if !n.mysqlUp.Load() {
		st.ReplicationState = "MariaDB down"
	} else if r := n.replInfo.Load(); r != nil {
		st.ReplicationState = *r
	}
	n.statusExtra(st)
	logDigestStatus(st, ps) // logdigest.go
	n.retentionStatus(st)
	if n.datadirLost.Load() {
		st.ReseedNeeded = true // datadir_lost.go
	}
	if n.witness() {
		witnessStatus(st)
	}
	st.Learner = n.learner() // learner.go
	for _, m := range n.members() {
		st.Members = append(st.Members, pbMember(m))
	}
	return st
}

func (a *adminServer) RecoverPoint(ctx context.Context, req *pb.RecoverPointRequest) (*pb.RecoverPointReply, error) {
	gtids := make([]binlog.GTID, len(req.Gtids))
	for i, s := range req.Gtids {
		g, err := binlog.ParseGTID(s)
		if err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "gtids[%d]: %v", i, err)
		}
		gtids[i] = g
	}
	valid, err := a.n.recoverPoint(ctx, req.NodeId, gtids)
	if err != nil {
		return nil, status.Errorf(codes.Unavailable, "recover point: %v", err)
	}
	ls := a.n.lease.State()
	return &pb.RecoverPointReply{Valid: valid, LastValidGtid: binlog.GTID(ls.LastGTID).String(), Epoch: ls.Epoch}, nil
}

func (a *adminServer) Switchover(ctx context.Context, req *pb.SwitchoverRequest) (*pb.SwitchoverReply, error) {
	n := a.n
	if err := leaseTargetError(n.members(), n.cfg.ID, req.To); err != nil { // witness.go
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	if !n.lease.Ready() {
		return nil, status.Errorf(codes.FailedPrecondition, "node %d is not the master; ask the master (node %d)", n.cfg.ID, n.lease.State().Master)
	}
	// Grant no more read windows: those granted run out while the target
	// catches up, so the gate before the grant below waits less.
	release := n.win.hold()
	defer release()
	// Quiesce: refuse new writes and let waiting commits be acknowledged,
	// so the target can catch up and nothing is left waiting (and killed).
	db := n.conn()
	if db == nil {
		return nil, status.Error(codes.Unavailable, "MariaDB is down")
	}
	if err := role.SetReadOnly(ctx, db); err != nil {
		return nil, status.Errorf(codes.Unavailable, "read_only: %v", err)
	}
	// Giving up, the master takes writes again only through its role
	// controller, on an observation taken under the driver's lock
	// (rolectl.SwitchoverAborted): turned off here, after a lease check
	// of our own, read_only could reopen a master the controller had just
	// demoted, or one whose lease ran out between the check and the SQL.
	resume := func() {
		n.ctl.step(context.Background(), func() rolectl.Event {
			return rolectl.SwitchoverAborted{Obs: n.observation()}
		})
	}
	if err := n.waitNoWaitingCommits(ctx, 5*time.Second); err != nil {
		resume()
		return nil, status.Errorf(codes.Unavailable, "commits still waiting: %v", err)
	}
	if err := n.waitCaughtUp(ctx, req.To); err != nil {
		resume()
		return nil, status.Errorf(codes.FailedPrecondition, "node %d has not caught up: %v", req.To, err)
	}
	// Switchover drops this node's own deadline before it proposes.
	v, err := n.lease.Switchover(ctx, req.To)
	n.stepDown(ctx, fmt.Sprintf("switchover to node %d", req.To))
	if err != nil {
		return nil, status.Errorf(codes.Unavailable, "switchover: %v", err)
	}
	if !v.Valid {
		return nil, status.Errorf(codes.Aborted, "switchover rejected: %v", v.Err())
	}
	n.publish(events.Switchover, "from", n.cfg.ID, "to", req.To, "lease_version", v.State.Version)
	return &pb.SwitchoverReply{LeaseVersion: v.State.Version, MasterId: v.State.Master}, nil
}

func (n *Node) waitNoWaitingCommits(ctx context.Context, d time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	for {
		db := n.conn()
		if db == nil {
			return errNoMySQL
		}
		w, err := role.WaitingCommits(ctx, db)
		if err == nil && w == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d waiting (%v)", w, err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// waitCaughtUp waits until node to's MariaDB has applied the whole valid
// log as this node knows it.
func (n *Node) waitCaughtUp(ctx context.Context, to uint32) error {
	cl, err := n.peerAdmin(to)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for {
		last, _ := n.lease.Position()
		st, err := cl.Status(ctx, &pb.StatusRequest{})
		if err == nil && st.MysqlGtidPos == binlog.GTID(last).String() && st.Role != pb.Role_ROLE_UNSAFE {
			return nil
		}
		select {
		case <-ctx.Done():
			if err != nil {
				return err
			}
			return fmt.Errorf("its MariaDB is at %q, the log at %q", st.MysqlGtidPos, binlog.GTID(last))
		case <-time.After(50 * time.Millisecond):
		}
	}
}
