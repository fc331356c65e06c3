package node

import (
	"context"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"

	"phxgo/binlogd/mtls"
	"phxgo/binlogd/mtls/mtlstest"
)

// One proxy certificate held 20,000 streams that never sent their
// request, each with 60 KB of metadata, on one connection (1.4 GB of
// binlogd; red-team test, session 39). With rpcGuardOptions a
// connection has at most maxRPCStreams streams at once, and a stream's
// headers at most maxRPCHeaderBytes.
func TestRPCStreamsAndHeadersCapped(t *testing.T) {
	dir := mtlstest.MakeCA(t, 2)
	srv := mtlstest.Load(t, mtlstest.Files(dir, 1))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var active, peak atomic.Int64
	gs := grpc.NewServer(append(rpcGuardOptions(),
		grpc.Creds(establishOnHandshake{credentials.NewTLS(srv.Server())}),
		grpc.UnknownServiceHandler(func(_ any, ss grpc.ServerStream) error {
			n := active.Add(1)
			defer active.Add(-1)
			for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
			}
			<-ss.Context().Done() // as a handler waiting for a request that never comes
			return nil
		}))...)
	go func() { _ = gs.Serve(rpcListener(l, maxRPCConns, maxRPCHandshakes, true, nil, nil)) }()
	t.Cleanup(gs.Stop)

	cli := mtlstest.Load(t, mtlstest.Of(dir, mtls.Identity{Role: mtls.RoleProxy, ID: 2}))
	cc, err := grpc.NewClient(l.Addr().String(), grpc.WithTransportCredentials(credentials.NewTLS(cli.Client("127.0.0.1"))))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	desc := &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for range 2 * maxRPCStreams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = cc.NewStream(ctx, desc, "/phxgo.test.Hold/Hold")
		}()
	}
	time.Sleep(time.Second)
	if p := peak.Load(); p == 0 || p > maxRPCStreams {
		t.Fatalf("%d streams open at once on one connection, want 1..%d", p, maxRPCStreams)
	}
	cancel()
	wg.Wait()

	hctx, hcancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer hcancel()
	hctx = metadata.AppendToOutgoingContext(hctx, "x-pad", strings.Repeat("a", 2*maxRPCHeaderBytes))
	s, err := cc.NewStream(hctx, desc, "/phxgo.test.Hold/Hold")
	if err == nil {
		err = s.RecvMsg(new(struct{}))
	}
	if err == nil || !strings.Contains(err.Error(), "header") {
		t.Fatalf("a stream with %d bytes of headers: %v, want refused for its header list", 2*maxRPCHeaderBytes, err)
	}
}
