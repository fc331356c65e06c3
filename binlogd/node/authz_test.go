package node

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"phxgo/binlogd/mtls"
	"phxgo/binlogd/mtls/mtlstest"
	pb "phxgo/proto"
)

// TestPolicyCoversEveryMethod: an RPC added to the Admin or Paxos service
// without a rule would be refused to everyone; this says so at once.
func TestPolicyCoversEveryMethod(t *testing.T) {
	for _, sd := range []grpc.ServiceDesc{pb.Admin_ServiceDesc, pb.PaxosPeer_ServiceDesc} {
		var names []string
		for _, m := range sd.Methods {
			names = append(names, m.MethodName)
		}
		for _, s := range sd.Streams {
			names = append(names, s.StreamName)
		}
		for _, name := range names {
			if _, ok := policy["/"+sd.ServiceName+"/"+name]; !ok {
				t.Errorf("%s/%s has no rule in policy (authz.go): decide who may call it", sd.ServiceName, name)
			}
		}
	}
}

// TestAuthorizeTable: who may call what, decided without a network.
func TestAuthorizeTable(t *testing.T) {
	node2, proxy2, admin := mtls.Identity{Role: mtls.RoleNode, ID: 2}, mtls.Identity{Role: mtls.RoleProxy, ID: 2}, mtls.Identity{Role: mtls.RoleAdmin}
	allow, deny := true, false
	cases := []struct {
		method string
		id     mtls.Identity
		req    any
		want   bool
	}{
		{pb.PaxosPeer_Send_FullMethodName, node2, nil, allow},
		{pb.PaxosPeer_Send_FullMethodName, proxy2, nil, deny},
		{pb.PaxosPeer_Send_FullMethodName, admin, nil, deny},
		{pb.Admin_Status_FullMethodName, node2, nil, allow},
		{pb.Admin_Status_FullMethodName, proxy2, nil, allow},
		{pb.Admin_Status_FullMethodName, admin, nil, allow},
		{pb.Admin_Members_FullMethodName, node2, nil, allow},
		{pb.Admin_Members_FullMethodName, proxy2, nil, deny},
		{pb.Admin_Members_FullMethodName, admin, nil, allow},
		{pb.Admin_PromoteMember_FullMethodName, node2, nil, deny},
		{pb.Admin_PromoteMember_FullMethodName, proxy2, nil, deny},
		{pb.Admin_PromoteMember_FullMethodName, admin, nil, allow},
		{pb.Admin_DemoteMember_FullMethodName, node2, nil, deny},
		{pb.Admin_DemoteMember_FullMethodName, proxy2, nil, deny},
		{pb.Admin_DemoteMember_FullMethodName, admin, nil, allow},
		{pb.Admin_RecoverPoint_FullMethodName, node2, &pb.RecoverPointRequest{NodeId: 2}, allow},
		{pb.Admin_RecoverPoint_FullMethodName, node2, &pb.RecoverPointRequest{NodeId: 1}, deny}, // fencing another node's term
		{pb.Admin_RecoverPoint_FullMethodName, admin, &pb.RecoverPointRequest{NodeId: 1}, allow},
		{pb.Admin_RecoverPoint_FullMethodName, proxy2, &pb.RecoverPointRequest{NodeId: 2}, deny},
		{pb.Admin_Switchover_FullMethodName, admin, nil, allow},
		{pb.Admin_Switchover_FullMethodName, node2, nil, deny},
		{pb.Admin_Switchover_FullMethodName, proxy2, nil, deny},
		{pb.Admin_AddMember_FullMethodName, admin, nil, allow},
		{pb.Admin_AddMember_FullMethodName, node2, nil, deny},
		{pb.Admin_RemoveMember_FullMethodName, admin, nil, allow},
		{pb.Admin_RemoveMember_FullMethodName, node2, nil, deny},
		{pb.Admin_RemoveMember_FullMethodName, proxy2, nil, deny},
		{"/grpc.health.v1.Health/Check", proxy2, nil, allow},
		{"/grpc.reflection.v1.ServerReflection/ServerReflectionInfo", admin, nil, deny},
	}
	for _, c := range cases {
		err := authorize(c.method, c.id, c.req)
		if got := err == nil; got != c.want {
			t.Errorf("%s by %s: allowed=%v, want %v (%v)", c.method, c.id, got, c.want, err)
		}
		if err != nil && status.Code(err) != codes.PermissionDenied {
			t.Errorf("%s by %s: code %v, want PermissionDenied", c.method, c.id, status.Code(err))
		}
	}
	err := authorize(pb.Admin_Switchover_FullMethodName, proxy2, nil)
	if msg := status.Convert(err).Message(); !strings.Contains(msg, "needs a certificate of role admin") || !strings.Contains(msg, "proxy 2") {
		t.Errorf("refusal should name the needed and the presented identity: %q", msg)
	}
}

// TestAuthzAttacks: three nodes in mutual TLS, and the attacks of someone
// holding less than an admin certificate, over real gRPC:
//   - no client certificate: neither Admin nor Paxos answers;
//   - a proxy certificate: Status yes; Switchover, RemoveMember,
//     RecoverPoint and Paxos Send are PermissionDenied;
//   - node 2's certificate sending Paxos messages in node 1's name: they
//     are dropped and counted;
//   - an admin certificate gets past authorisation on Switchover (the
//     node then says it has no MariaDB, not that admin may not).
func TestAuthzAttacks(t *testing.T) {
	ca := mtlstest.MakeCA(t, 3)
	cfgs, _, _ := testNodes(t, []mtls.Files{mtlstest.Files(ca, 1), mtlstest.Files(ca, 2), mtlstest.Files(ca, 3)})
	addr1 := cfgs[0].Self().GRPCAddr
	as := func(id mtls.Identity) grpc.DialOption { return DialOption(mtlstest.Load(t, mtls.DirFiles(ca, id))) }
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// The cluster works over mTLS with identities: an admin's
	// RecoverPoint runs a read barrier, which needs Paxos between nodes.
	adminCl, _ := dialAdmin(t, addr1, as(mtls.Identity{Role: mtls.RoleAdmin}))
	for {
		_, err := adminCl.RecoverPoint(ctx, &pb.RecoverPointRequest{NodeId: 9}, grpc.WaitForReady(true))
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("admin RecoverPoint through Paxos over mTLS: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}

	short := func() (context.Context, context.CancelFunc) { return context.WithTimeout(ctx, 3*time.Second) }

	// No client certificate: a plain client, and a TLS client that trusts
	// the CA but presents nothing. The handshake fails; nothing is served.
	noCert := credentials.NewTLS(&tls.Config{RootCAs: mtlstest.Load(t, mtlstest.Files(ca, 1)).Pool, MinVersion: tls.VersionTLS12})
	for name, opt := range map[string]grpc.DialOption{
		"plain":   grpc.WithTransportCredentials(insecure.NewCredentials()),
		"no cert": grpc.WithTransportCredentials(noCert),
	} {
		cl, _ := dialAdmin(t, addr1, opt)
		sctx, scancel := short()
		_, err := cl.Status(sctx, &pb.StatusRequest{})
		scancel()
		if err == nil {
			t.Fatalf("%s client got Status", name)
		}
		if err := paxosSend(ctx, t, addr1, opt, 1); err == nil {
			t.Fatalf("%s client: Paxos Send accepted", name)
		}
	}

	// A proxy certificate: what sqlproxy needs (Status) and nothing more.
	proxyOpt := as(mtls.Identity{Role: mtls.RoleProxy, ID: 1})
	proxyCl, _ := dialAdmin(t, addr1, proxyOpt)
	if st, err := proxyCl.Status(ctx, &pb.StatusRequest{}); err != nil || st.NodeId != 1 {
		t.Fatalf("proxy Status: %v, %v", st, err)
	}
	denied := func(what string, err error, needs string) {
		t.Helper()
		if status.Code(err) != codes.PermissionDenied || !strings.Contains(err.Error(), needs) || !strings.Contains(err.Error(), "proxy 1") {
			t.Fatalf("proxy %s: %v; want PermissionDenied naming %q and the caller", what, err, needs)
		}
	}
	_, err := proxyCl.Switchover(ctx, &pb.SwitchoverRequest{To: 2})
	denied("Switchover", err, "admin")
	_, err = proxyCl.RemoveMember(ctx, &pb.RemoveMemberRequest{Id: 3})
	denied("RemoveMember", err, "admin")
	_, err = proxyCl.RecoverPoint(ctx, &pb.RecoverPointRequest{NodeId: 1})
	denied("RecoverPoint", err, "node or admin")
	denied("Paxos Send", paxosSend(ctx, t, addr1, proxyOpt, 1), "node")

	// Node 2's certificate, messages in node 1's name: dropped, counted.
	node2 := as(mtls.Identity{Role: mtls.RoleNode, ID: 2})
	before := forgedCount(t, cfgs[0].HTTPAddr, 2)
	if err := paxosSend(ctx, t, addr1, node2, 1, 1, 1); err != nil {
		t.Fatalf("node 2's Send stream: %v", err)
	}
	if got := forgedCount(t, cfgs[0].HTTPAddr, 2); got != before+3 {
		t.Fatalf("forged messages counted %v, want %v", got, before+3)
	}
	// Node 2 may still speak for itself (node 2's own stream carries real
	// traffic too, so only the forged count must stay put).
	if err := paxosSend(ctx, t, addr1, node2, 2); err != nil {
		t.Fatal(err)
	}
	if got := forgedCount(t, cfgs[0].HTTPAddr, 2); got != before+3 {
		t.Fatalf("a message From=2 by node 2 was counted as forged: %v", got)
	}
	// Node 2 asking RecoverPoint for node 1 (which would fence node 1's
	// term) is refused; for itself it is allowed.
	node2Cl, _ := dialAdmin(t, addr1, node2)
	if _, err := node2Cl.RecoverPoint(ctx, &pb.RecoverPointRequest{NodeId: 1}); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("node 2 RecoverPoint for node 1: %v", err)
	}
	if _, err := node2Cl.RecoverPoint(ctx, &pb.RecoverPointRequest{NodeId: 2}); err != nil {
		t.Fatalf("node 2 RecoverPoint for itself: %v", err)
	}
	if _, err := node2Cl.Switchover(ctx, &pb.SwitchoverRequest{To: 3}); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("node 2 Switchover: %v", err)
	}

	// Admin passes authorisation on Switchover; the node answers on the
	// merits (no MariaDB here, or not the master).
	_, err = adminCl.Switchover(ctx, &pb.SwitchoverRequest{To: 2})
	if c := status.Code(err); c == codes.PermissionDenied || c == codes.Unauthenticated {
		t.Fatalf("admin Switchover refused by authorisation: %v", err)
	}
	t.Logf("admin Switchover answered on the merits: %v", err)

	// A removed node's certificate serves nothing, not even Status or a
	// Backup (red-team test, session 37: a node certificate streamed a
	// full copy of MariaDB; nothing revokes a certificate). Node 2's
	// still does.
	if _, err := adminCl.RemoveMember(ctx, &pb.RemoveMemberRequest{Id: 3}); err != nil {
		t.Fatalf("remove node 3: %v", err)
	}
	node3 := as(mtls.Identity{Role: mtls.RoleNode, ID: 3})
	node3Cl, _ := dialAdmin(t, addr1, node3)
	for {
		_, err := node3Cl.Status(ctx, &pb.StatusRequest{})
		if status.Code(err) == codes.PermissionDenied && strings.Contains(err.Error(), "was removed") {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("removed node 3's Status: %v; want PermissionDenied, was removed", err)
		}
		time.Sleep(50 * time.Millisecond) // node 1 learns the removal is active
	}
	bs, err := node3Cl.Backup(ctx, &pb.BackupRequest{NodeId: 3})
	if err == nil {
		_, err = bs.Recv()
	}
	if status.Code(err) != codes.PermissionDenied || !strings.Contains(err.Error(), "was removed") {
		t.Fatalf("removed node 3's Backup: %v", err)
	}
	if err := paxosSend(ctx, t, addr1, node3, 3); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("removed node 3's Paxos Send: %v", err)
	}
	if _, err := node2Cl.Status(ctx, &pb.StatusRequest{}); err != nil {
		t.Fatalf("node 2's Status after node 3's removal: %v", err)
	}

	// The refusals are counted by method and role.
	body := scrape(t, cfgs[0].HTTPAddr)
	for _, want := range []string{
		`phxgo_binlogd_grpc_denied_total{method="/phxgo.admin.Admin/Switchover",role="proxy"} 1`,
		`phxgo_binlogd_grpc_denied_total{method="/phxgo.paxos.PaxosPeer/Send",role="proxy"} 1`,
		`phxgo_binlogd_insecure_no_tls 0`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}

// paxosSend opens a Paxos Send stream to addr and sends one batch with a
// heartbeat-free probe message per from, then closes it.
func paxosSend(ctx context.Context, t *testing.T, addr string, opt grpc.DialOption, froms ...uint32) error {
	t.Helper()
	cc, err := grpc.NewClient(addr, opt)
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	s, err := pb.NewPaxosPeerClient(cc).Send(sctx)
	if err != nil {
		return err
	}
	b := &pb.PaxosBatch{}
	for _, f := range froms {
		// Type 0 is invalid: if one got past the From check the node would
		// drop it anyway, so the test cannot disturb the log.
		b.Messages = append(b.Messages, &pb.PaxosMessage{From: f, To: 1})
	}
	if err := s.Send(b); err != nil && err != io.EOF {
		return err
	}
	_, err = s.CloseAndRecv()
	return err
}

func scrape(t *testing.T, addr string) string {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func forgedCount(t *testing.T, httpAddr string, peer uint32) float64 {
	t.Helper()
	prefix := fmt.Sprintf(`phxgo_binlogd_paxos_forged_messages_total{peer="%d"} `, peer)
	for _, line := range strings.Split(scrape(t, httpAddr), "\n") {
		if v, ok := strings.CutPrefix(line, prefix); ok {
			var f float64
			fmt.Sscan(v, &f)
			return f
		}
	}
	return 0
}
