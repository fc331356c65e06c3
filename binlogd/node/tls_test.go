package node

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"phxgo/binlogd/config"
	"phxgo/binlogd/localcluster"
	"phxgo/binlogd/mtls"
	"phxgo/binlogd/mtls/mtlstest"
	"phxgo/internal/testkit"
	pb "phxgo/proto"
)

// testNodes starts three binlogd nodes in this process, without MariaDB
// (Paxos, the lease log and the Admin service work without it), node i
// with certificate files files[i-1] (zero Files: plain).
func testNodes(t *testing.T, files []mtls.Files, hooks ...func(*Node)) (cfgs []*config.Config, nodes []*Node, stop []context.CancelFunc) {
	t.Helper()
	return testNodesOf(t, files, nil, hooks...)
}

// testNodesOf is testNodes whose nodes listed in absent are members but
// are not started (their addresses are free for the test).
func testNodesOf(t *testing.T, files []mtls.Files, absent map[uint32]bool, hooks ...func(*Node)) (cfgs []*config.Config, nodes []*Node, stop []context.CancelFunc) {
	t.Helper()
	base := localcluster.FreeBasePort(len(files))
	dir := t.TempDir()
	cred := filepath.Join(dir, "cred.json")
	if err := config.SaveCredentials(cred, config.Credentials{CaptureUser: "c", CapturePassword: "p", AppUser: "a", AppPassword: "q"}); err != nil {
		t.Fatal(err)
	}
	var members []config.Member
	for id := 1; id <= len(files); id++ {
		a := func(off int) string { return fmt.Sprintf("127.0.0.1:%d", base+10*id+off) }
		members = append(members, config.Member{ID: uint32(id), MySQLAddr: a(0), GRPCAddr: a(1)})
	}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	for i, f := range files {
		c := &config.Config{ID: uint32(i + 1), Dir: filepath.Join(dir, fmt.Sprint("n", i+1)),
			MySQLDir: filepath.Join(dir, fmt.Sprint("n", i+1), "mysql"), Members: members, CredentialsFile: cred,
			ReplAddr:      fmt.Sprintf("127.0.0.1:%d", base+10*(i+1)+2),
			LeaseDuration: config.Duration{Duration: 2 * time.Second}, DriftMargin: config.Duration{Duration: 200 * time.Millisecond},
			Security: config.Security{TLSCert: f.Cert, TLSKey: f.Key, TLSCA: f.CA, InsecureNoTLS: !f.Enabled()}, // zero Files: plain on purpose
			HTTPAddr: fmt.Sprintf("127.0.0.1:%d", base+10*(i+1)+4)}                                              // tests scrape /metrics
		c.SetDefaults()
		if err := c.Validate(); err != nil {
			t.Fatal(err)
		}
		if absent[c.ID] {
			continue
		}
		n, err := New(c, logger)
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range hooks {
			h(n)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); _ = n.Run(ctx) }()
		t.Cleanup(func() { cancel(); <-done })
		cfgs, nodes, stop = append(cfgs, c), append(nodes, n), append(stop, cancel)
	}
	return cfgs, nodes, stop
}

func dialAdmin(t *testing.T, addr string, opt grpc.DialOption) (pb.AdminClient, healthpb.HealthClient) {
	t.Helper()
	cc, err := grpc.NewClient(addr, opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return pb.NewAdminClient(cc), healthpb.NewHealthClient(cc)
}

// TestMutualTLS: nodes 1 and 2 hold certificates of the cluster CA, node 3
// one of another CA. 1 and 2 form a majority over mTLS (a read barrier
// through Paxos answers); node 3 is refused both ways, and so are an
// operator command with a stranger's certificate and a plain client.
func TestMutualTLS(t *testing.T) {
	ca, other := mtlstest.MakeCA(t, 3), mtlstest.MakeCA(t, 3)
	logs := &testkit.LogBuffer{}
	cfgs, nodes, _ := testNodes(t, []mtls.Files{mtlstest.Files(ca, 1), mtlstest.Files(ca, 2), mtlstest.Files(other, 3)}, func(n *Node) {
		n.log = slog.New(slog.NewTextHandler(logs, nil)).With("node", n.cfg.ID)
	})
	good := DialOption(mtlstest.Load(t, mtls.DirFiles(ca, mtls.Identity{Role: mtls.RoleAdmin}))) // an operator's CLI with the cluster's CA
	addr1 := cfgs[0].Self().GRPCAddr

	admin, _ := dialAdmin(t, addr1, good)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// RecoverPoint runs a read barrier through the log: it needs a
	// majority, i.e. Paxos between nodes 1 and 2 over TLS.
	// Retried: a first campaign may time out while node 2 starts.
	for {
		_, err := admin.RecoverPoint(ctx, &pb.RecoverPointRequest{NodeId: 9}, grpc.WaitForReady(true))
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("RecoverPoint through nodes 1+2 over mTLS: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if cl, err := nodes[0].peerAdmin(2); err != nil {
		t.Fatal(err)
	} else if st, err := cl.Status(ctx, &pb.StatusRequest{}); err != nil || st.NodeId != 2 {
		t.Fatalf("node 1 -> node 2 Admin over mTLS: %v, %v", st, err)
	}

	short := func() (context.Context, context.CancelFunc) { return context.WithTimeout(ctx, 3*time.Second) }
	// Node 1 dialling node 3: node 3's certificate is not from the CA.
	c3, err := nodes[0].peerAdmin(3)
	if err != nil {
		t.Fatal(err)
	}
	// Node 3 may still be starting (connection refused): await its
	// listener, then the refusal.
	for {
		sctx, scancel := short()
		_, err = c3.Status(sctx, &pb.StatusRequest{})
		scancel()
		if err != nil && strings.Contains(err.Error(), "certificate signed by unknown authority") {
			break
		}
		if err == nil || !strings.Contains(err.Error(), "connection refused") || ctx.Err() != nil {
			t.Fatalf("node 1 -> node 3 (other CA): want an unknown-authority error, got %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Clients with another CA's certificate (trusting either CA), and a
	// plain client.
	strangerCert := mtlstest.Load(t, mtlstest.Files(other, 1))
	strangerCert.Pool = mtlstest.Load(t, mtlstest.Files(ca, 1)).Pool
	for name, opt := range map[string]grpc.DialOption{
		"other CA":              DialOption(mtlstest.Load(t, mtlstest.Files(other, 1))),
		"other CA, trusts ours": DialOption(strangerCert),
		"plain":                 grpc.WithTransportCredentials(insecure.NewCredentials()),
	} {
		cl, _ := dialAdmin(t, addr1, opt)
		sctx, scancel := short()
		_, err := cl.Status(sctx, &pb.StatusRequest{})
		scancel()
		// The client that trusts our CA learns of its refusal from an
		// alert or a closed socket, whichever comes first; the server's
		// log says why (below).
		if err == nil || name == "other CA" && !strings.Contains(err.Error(), "certificate") {
			t.Fatalf("%s client: want a certificate error, got %v", name, err)
		}
		t.Logf("%s client refused: %v", name, err)
	}
	// Both sides say so in their logs, naming the peer.
	for _, want := range [][2]string{{"node=1", "TLS handshake with a peer failed"}, {"node=3", "refused a connection"}, {"node=1", "refused a connection"}} {
		found := func() bool {
			for _, line := range strings.Split(logs.String(), "\n") {
				if strings.Contains(line, want[0]) && strings.Contains(line, want[1]) && strings.Contains(line, "certificate") {
					return true
				}
			}
			return false
		}
		// A server logs after its side of the handshake, maybe after the
		// client already has its error.
		for end := time.Now().Add(5 * time.Second); !found() && time.Now().Before(end); {
			time.Sleep(20 * time.Millisecond)
		}
		if !found() {
			t.Errorf("no log line with %q and %q in:\n%s", want[0], want[1], logs.String())
		}
	}
}

// TestHealth: the gRPC health service says SERVING while the node runs
// and NOT_SERVING once it starts stopping.
func TestHealth(t *testing.T) {
	release := make(chan struct{})
	var stopped sync.Once
	t.Cleanup(func() { stopped.Do(func() { close(release) }) })
	cfgs, _, stop := testNodes(t, []mtls.Files{{}, {}, {}}, func(n *Node) {
		if n.cfg.ID == 1 {
			n.testHookStopping = func() { <-release }
		}
	})
	_, hc := dialAdmin(t, cfgs[0].Self().GRPCAddr, DialOption(nil))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, svc := range []string{"", HealthService} {
		r, err := hc.Check(ctx, &healthpb.HealthCheckRequest{Service: svc}, grpc.WaitForReady(true))
		if err != nil || r.Status != healthpb.HealthCheckResponse_SERVING {
			t.Fatalf("Check(%q) = %v, %v; want SERVING", svc, r, err)
		}
	}
	w, err := hc.Watch(ctx, &healthpb.HealthCheckRequest{Service: HealthService})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := w.Recv(); err != nil || r.Status != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("first Watch update %v, %v", r, err)
	}
	stop[0]() // node 1 begins to stop and holds in testHookStopping
	r, err := w.Recv()
	if err != nil || r.Status != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Fatalf("after stop: Watch update %v, %v; want NOT_SERVING", r, err)
	}
	if r, err := hc.Check(ctx, &healthpb.HealthCheckRequest{}); err != nil || r.Status != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Fatalf("Check while stopping = %v, %v; want NOT_SERVING", r, err)
	}
	stopped.Do(func() { close(release) })
}
