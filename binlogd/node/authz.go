package node

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"phxgo/binlogd/mtls"
	"phxgo/paxos"
	pb "phxgo/proto"
)

// Authorisation on binlogd's gRPC port. mTLS (tls.go) says the caller
// holds a certificate of the cluster CA; the identity in that certificate
// (mtls.IdentityOf: node N, proxy N or admin) says what it may call:
//
//	method                      node        proxy   admin
//	PaxosPeer/Send              yes (1)     -       -
//	Admin/Status                yes         yes     yes
//	Admin/Members               yes         -       yes
//	Admin/RecoverPoint          own id (2)  -       yes
//	Admin/Switchover            -           -       yes
//	Admin/AddMember             -           -       yes
//	Admin/RemoveMember          -           -       yes
//	Admin/Promote/DemoteMember  -           -       yes
//	Admin/ReadWindow            yes (3)     yes     yes
//	Admin/Events                yes         yes     yes (4)
//	Admin/Reload                -           -       yes
//	Admin/WatchStatus           yes         yes     yes
//	grpc.health.v1.Health/*     any certificate of the CA
//	anything else               -           -       -
//
// (1) and every message's From must be the certificate's node id: a
// message speaking for another node is dropped and counted
// (phxgo_binlogd_paxos_forged_messages_total), see paxos.PeerAuth.
// (2) `binlogd recover` runs on a node with that node's certificate and
// asks about its own binlog; asking for another node id would let a node
// fence the master's term at will, so it needs admin.
// (3) a node forwards a proxy's request to the master (windows.go); a
// window only delays the master's own step-down by at most d/5 + m.
// (4) events say only what the log and Status already say (roles,
// epochs, member ids); a proxy may watch them to re-route at once.
//
// Nodes call each other only for Paxos and Status (waitCaughtUp,
// retention) and ReadWindow (forwarding); sqlproxy calls WatchStatus (Status on an older binlogd) and ReadWindow (sqlproxy/topology). A refusal is
// PermissionDenied naming the identity the call needs. Without TLS
// ("insecure_no_tls") there is no identity and everything is allowed:
// that is what the opt-out means.

// rule is who may call one method.
type rule struct {
	roles []mtls.Role
	// check, if set, further limits a permitted call by its request.
	check func(id mtls.Identity, req any) error
}

var anyRole = []mtls.Role{mtls.RoleNode, mtls.RoleProxy, mtls.RoleAdmin}

// policy maps gRPC full method names to their rule. A method not listed
// is refused to everyone (TestPolicyCoversEveryMethod keeps it complete).
var policy = map[string]rule{
	pb.PaxosPeer_Send_FullMethodName:      {roles: []mtls.Role{mtls.RoleNode}},
	pb.Admin_Status_FullMethodName:        {roles: anyRole},
	pb.Admin_Members_FullMethodName:       {roles: []mtls.Role{mtls.RoleNode, mtls.RoleAdmin}},
	pb.Admin_RecoverPoint_FullMethodName:  {roles: []mtls.Role{mtls.RoleNode, mtls.RoleAdmin}, check: ownRecoverPoint},
	pb.Admin_Switchover_FullMethodName:    {roles: []mtls.Role{mtls.RoleAdmin}},
	pb.Admin_AddMember_FullMethodName:     {roles: []mtls.Role{mtls.RoleAdmin}},
	pb.Admin_RemoveMember_FullMethodName:  {roles: []mtls.Role{mtls.RoleAdmin}},
	pb.Admin_PromoteMember_FullMethodName: {roles: []mtls.Role{mtls.RoleAdmin}},
	pb.Admin_DemoteMember_FullMethodName:  {roles: []mtls.Role{mtls.RoleAdmin}},
	pb.Admin_Backup_FullMethodName:        {roles: []mtls.Role{mtls.RoleNode, mtls.RoleAdmin}}, // a node only for its own id: backup.go checks the request
	pb.Admin_ReadWindow_FullMethodName:    {roles: anyRole},                                    // proxies ask; a node forwards a proxy's request to the master (windows.go)
	pb.Admin_Events_FullMethodName:        {roles: anyRole},                                    // read-only: what the log already shows (binlogd/events)
	pb.Admin_Reload_FullMethodName:        {roles: []mtls.Role{mtls.RoleAdmin}},                // swaps this node's certificate and log level
	pb.Admin_WatchStatus_FullMethodName:   {roles: anyRole},                                    // Status, pushed: proxies route by it (watch.go)
}

// healthPrefix: the standard health service is open to any certificate of
// the CA (probes, load balancers).
const healthPrefix = "/grpc.health.v1.Health/"

func ownRecoverPoint(id mtls.Identity, req any) error {
	r, ok := req.(*pb.RecoverPointRequest)
	if !ok || id.Role != mtls.RoleNode || r.NodeId == id.ID {
		return nil
	}
	return fmt.Errorf("%s may ask RecoverPoint only for its own node id %d, not %d (another node's needs the admin certificate)", id, id.ID, r.NodeId)
}

// authorize decides a call to method by id (req: the unary request, nil
// for streams).
func authorize(method string, id mtls.Identity, req any) error {
	if strings.HasPrefix(method, healthPrefix) {
		return nil
	}
	r, ok := policy[method]
	if !ok {
		return status.Errorf(codes.PermissionDenied, "%s is not served to any identity", method)
	}
	allowed := false
	for _, role := range r.roles {
		allowed = allowed || role == id.Role
	}
	if !allowed {
		return status.Errorf(codes.PermissionDenied, "%s needs a certificate of role %s; this call presented %s (%s)",
			method, rolesText(r.roles), id, id.URI())
	}
	if r.check != nil {
		if err := r.check(id, req); err != nil {
			return status.Error(codes.PermissionDenied, err.Error())
		}
	}
	return nil
}

func rolesText(rs []mtls.Role) string {
	s := make([]string, len(rs))
	for i, r := range rs {
		s[i] = string(r)
	}
	return strings.Join(s, " or ")
}

// peerIdentity is the identity in the verified client certificate of the
// connection ctx belongs to.
func peerIdentity(ctx context.Context) (mtls.Identity, error) {
	p, ok := peer.FromContext(ctx)
	if !ok {
		return mtls.Identity{}, status.Error(codes.Unauthenticated, "no peer information")
	}
	ti, ok := p.AuthInfo.(credentials.TLSInfo)
	if !ok || len(ti.State.VerifiedChains) == 0 || len(ti.State.VerifiedChains[0]) == 0 {
		return mtls.Identity{}, status.Error(codes.Unauthenticated, "no verified client certificate")
	}
	id, err := mtls.IdentityOf(ti.State.VerifiedChains[0][0])
	if err != nil {
		return mtls.Identity{}, status.Errorf(codes.PermissionDenied, "client certificate: %v", err)
	}
	return id, nil
}

// authorizer is the interceptors with their metrics and rate-limited log.
type authorizer struct {
	log    *slog.Logger
	denied *prometheus.CounterVec // method, role
	forged *prometheus.CounterVec // peer (the certificate's node id)

	// removed reports a node id that was a member and was removed
	// (paxos.Node.Removed); nil: none is. Its certificate is refused
	// everything: no CRL revokes it, and it could otherwise still stream
	// a full copy of MariaDB (Backup), watch the cluster, or send Paxos
	// messages (red-team test, session 37).
	removed func(id uint32) bool
	// member reports whether node id is a member now; nil: everyone is.
	// A proxy's certificate serves only while its node is a member: a
	// removed node's proxy (or one of an id never added) still got
	// Status, WatchStatus and read windows, and each window can delay the
	// master's step-down (red-team test, session 38).
	member func(id uint32) bool

	mu      sync.Mutex
	last    map[string]time.Time  // rate limit of warnings, by what they are about
	streams map[mtls.Identity]int // open server streams but Paxos ones (streamcap.go)
}

func newAuthorizer(log *slog.Logger, reg prometheus.Registerer) *authorizer {
	a := &authorizer{
		log: log, last: map[string]time.Time{},
		denied: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "phxgo", Subsystem: "binlogd", Name: "grpc_denied_total",
			Help: "gRPC calls refused because the caller's certificate identity may not make them"}, []string{"method", "role"}),
		forged: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "phxgo", Subsystem: "binlogd", Name: "paxos_forged_messages_total",
			Help: "Paxos messages dropped because their From was not the node id in the sending peer's certificate"}, []string{"peer"}),
	}
	if reg != nil {
		reg.MustRegister(a.denied, a.forged)
	}
	return a
}

func (a *authorizer) check(ctx context.Context, method string, req any) (mtls.Identity, error) {
	id, err := peerIdentity(ctx)
	if err == nil {
		err = authorize(method, id, req)
	}
	if err == nil && id.Role == mtls.RoleNode && a.removed != nil && !strings.HasPrefix(method, healthPrefix) && a.removed(id.ID) {
		err = status.Errorf(codes.PermissionDenied, "%s was removed from the cluster: its certificate no longer serves here "+
			"(to add node %d again, reseed it with the admin certificate: binlogd reseed -tls-dir DIR)", id, id.ID)
	}
	if err == nil && id.Role == mtls.RoleProxy && a.member != nil && !strings.HasPrefix(method, healthPrefix) && !a.member(id.ID) {
		err = status.Errorf(codes.PermissionDenied, "%s: node %d is not a member of the cluster, so its proxy's certificate serves nothing here", id, id.ID)
	}
	if err != nil {
		role := string(id.Role)
		if role == "" {
			role = "none"
		}
		a.denied.WithLabelValues(method, role).Inc()
		addr := ""
		if p, ok := peer.FromContext(ctx); ok {
			addr = p.Addr.String()
		}
		a.warn("denied:"+method+":"+id.String(), "refused a gRPC call: the caller's identity may not make it",
			"method", method, "identity", id.String(), "peer", addr, "err", status.Convert(err).Message())
	}
	return id, err
}

func (a *authorizer) unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	if _, err := a.check(ctx, info.FullMethod, req); err != nil {
		return nil, err
	}
	return h(ctx, req)
}

func (a *authorizer) stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	id, err := a.check(ss.Context(), info.FullMethod, nil)
	if err != nil {
		return err
	}
	if info.FullMethod == pb.PaxosPeer_Send_FullMethodName {
		ctx := paxos.WithPeerAuth(ss.Context(), paxos.PeerAuth{ID: id.ID, Forged: a.forgedBy(id)})
		ss = &ctxStream{ServerStream: ss, ctx: ctx}
		return h(srv, ss)
	}
	release, err := a.takeStream(id, info.FullMethod)
	if err != nil {
		return err
	}
	defer release()
	return h(srv, ss)
}

// forgedBy counts and logs the messages peer id sent in another node's
// name.
func (a *authorizer) forgedBy(id mtls.Identity) func(claimed uint32) {
	c := a.forged.WithLabelValues(strconv.FormatUint(uint64(id.ID), 10))
	return func(claimed uint32) {
		c.Inc()
		a.warn(fmt.Sprintf("forged:%d:%d", id.ID, claimed), "dropped a Paxos message sent in another node's name",
			"identity", id.String(), "claimed_from", claimed)
	}
}

// warn logs at most once per key per logEvery: a misbehaving peer repeats
// itself (Paxos redials every 500 ms, batches carry many messages).
func (a *authorizer) warn(key, msg string, args ...any) {
	now := time.Now()
	a.mu.Lock()
	quiet := now.Sub(a.last[key]) < logEvery
	if !quiet {
		a.last[key] = now
		if len(a.last) > 1024 { // bound the map; forgetting only makes a log line more likely
			clear(a.last)
			a.last[key] = now
		}
	}
	a.mu.Unlock()
	if !quiet {
		a.log.Warn(msg, args...)
	}
}

// ctxStream is a ServerStream with a context the interceptor extended.
type ctxStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *ctxStream) Context() context.Context { return s.ctx }
