package node

import (
	"context"
	"encoding/json"
	"errors"
	"sort"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"phxgo/binlogd/config"
	"phxgo/paxos"
	pb "phxgo/proto"
)

// Members come from the Paxos log (paxos.Node.Membership): the config
// file's members only seed it (the initial members, or, for a joining
// node, whom to ask). Each paxos.Member carries the binlogd member entry
// (all its addresses) as JSON in Info; the initial members carry none, so
// their entries come from the config file.

// members returns the current members, by id.
// hasMember reports whether node id is a member now, of any kind
// (authz.go: a proxy's certificate serves only for a member).
func (n *Node) hasMember(id uint32) bool {
	if m, _ := n.px.Membership(); m.Members != nil {
		return m.Has(id)
	}
	for _, m := range n.cfg.SortedMembers() { // joining: not learned yet
		if m.ID == id {
			return true
		}
	}
	return false
}

func (n *Node) members() []config.Member {
	m, _ := n.px.Membership()
	if m.Members == nil {
		return n.cfg.SortedMembers() // joining: not learned yet
	}
	out := make([]config.Member, 0, len(m.Members))
	for _, pm := range m.Members {
		out = append(out, n.memberEntry(pm))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

func (n *Node) memberEntry(pm paxos.Member) config.Member {
	// The log's learner flag wins: promote and demote flip it in the
	// Paxos member, not in Info.
	var cm config.Member
	if len(pm.Info) > 0 && json.Unmarshal(pm.Info, &cm) == nil && cm.ID == pm.ID {
		cm.Learner = pm.Learner
		return cm
	}
	for _, c := range n.cfg.Members {
		if c.ID == pm.ID {
			c.Learner = pm.Learner
			return c
		}
	}
	return config.Member{ID: pm.ID, GRPCAddr: pm.Addr, Learner: pm.Learner}
}

// member returns id's entry, if id is a current member.
func (n *Node) member(id uint32) (config.Member, bool) {
	for _, m := range n.members() {
		if m.ID == id {
			return m, true
		}
	}
	return config.Member{}, false
}

// isMember reports whether this node is in the log's members now (a
// voter or a learner): a joining node before its addition and a removed
// node are not, and neither serves nor asks for the lease.
func (n *Node) isMember() bool {
	m, _ := n.px.Membership()
	return m.Has(n.cfg.ID)
}

func pbMember(e config.Member) *pb.Member {
	return &pb.Member{Id: e.ID, GrpcAddr: e.GRPCAddr, MysqlAddr: e.MySQLAddr, ProxyAddr: e.ProxyAddr, Witness: e.Witness, Learner: e.Learner}
}

func membersReply(m paxos.Membership, pending bool, entries []config.Member) *pb.MembersReply {
	r := &pb.MembersReply{Index: m.Index, Active: m.Active, Pending: pending}
	for _, e := range entries {
		r.Members = append(r.Members, pbMember(e))
	}
	return r
}

func (a *adminServer) Members(ctx context.Context, _ *pb.MembersRequest) (*pb.MembersReply, error) {
	m, pending := a.n.px.Membership()
	return membersReply(m, pending, a.n.members()), nil
}

func (a *adminServer) AddMember(ctx context.Context, req *pb.AddMemberRequest) (*pb.MembersReply, error) {
	pm := req.Member
	if pm == nil {
		return nil, status.Error(codes.InvalidArgument, "member: required")
	}
	// pm.ReplAddr (sent by older CLIs) is ignored: a replication endpoint
	// is node-local (config repl_addr), no other member uses it.
	e := config.Member{ID: pm.Id, GRPCAddr: pm.GrpcAddr, MySQLAddr: pm.MysqlAddr, ProxyAddr: pm.ProxyAddr, Witness: pm.Witness, Learner: pm.Learner}
	probe := config.Config{ID: e.ID, Dir: "-", MySQLDir: "-", CredentialsFile: "-", Join: true,
		Members: append(a.n.members(), e),
		// The probe checks the member entries; link security is in the
		// new node's own config, not here.
		Security: config.Security{InsecureNoTLS: true}}
	probe.SetDefaults()
	if err := probe.Validate(); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "member %d: %v", e.ID, err)
	}
	// The learner flag lives in the Paxos member (promote and demote flip
	// it there), not in Info, which must stay unchanged across them.
	ie := e
	ie.Learner = false
	info, _ := json.Marshal(ie)
	m, err := a.n.px.AddMember(ctx, paxos.Member{ID: e.ID, Addr: e.GRPCAddr, Info: info, Learner: e.Learner})
	if err != nil {
		return nil, membershipStatus(err)
	}
	a.n.log.Info("member added", "member", e.ID, "grpc", e.GRPCAddr, "learner", e.Learner, "index", m.Index, "active", m.Active)
	return membersReply(m, false, a.n.members()), nil
}

func (a *adminServer) RemoveMember(ctx context.Context, req *pb.RemoveMemberRequest) (*pb.MembersReply, error) {
	if _, ok := a.n.member(req.Id); !ok {
		return nil, status.Errorf(codes.InvalidArgument, "node %d is not a member", req.Id)
	}
	if st := a.n.lease.State(); st.Master == req.Id {
		return nil, status.Errorf(codes.FailedPrecondition, "node %d is the master: switch over to another node first (binlogd switchover)", req.Id)
	}
	m, err := a.n.px.RemoveMember(ctx, req.Id)
	if err != nil {
		return nil, membershipStatus(err)
	}
	a.n.log.Info("member removed", "member", req.Id, "index", m.Index, "active", m.Active)
	return membersReply(m, false, a.n.members()), nil
}

func membershipStatus(err error) error {
	switch {
	case errors.Is(err, paxos.ErrMembershipPending):
		return status.Errorf(codes.FailedPrecondition, "%v (retry once it is active)", err)
	case errors.Is(err, paxos.ErrMembershipConflict):
		return status.Errorf(codes.Aborted, "%v", err)
	case errors.Is(err, paxos.ErrBadMembership):
		return status.Errorf(codes.InvalidArgument, "%v", err)
	case errors.Is(err, paxos.ErrNoQuorum):
		return status.Errorf(codes.Unavailable, "%v", err)
	}
	return status.Errorf(codes.Unavailable, "membership change: %v (outcome unknown: check binlogd members list)", err)
}
