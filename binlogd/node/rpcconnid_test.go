package node

import (
	"context"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"phxgo/binlogd/mtls"
	"phxgo/binlogd/mtls/mtlstest"
)

// One proxy certificate held every established slot of the gRPC port,
// and an operator's status (a peer's link after a blip too) was refused
// (red-team test, session 39). An identity that is not a node's holds at
// most maxRPCConnsPerIdentity connections; a node, and another identity,
// still get in, and a closed connection gives its slot back.
func TestRPCConnsPerIdentityCapped(t *testing.T) {
	dir := mtlstest.MakeCA(t, 2)
	srv := mtlstest.Load(t, mtlstest.Files(dir, 1))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer(append(rpcGuardOptions(), grpc.Creds(establishOnHandshake{credentials.NewTLS(srv.Server())}))...)
	healthpb.RegisterHealthServer(gs, health.NewServer())
	go func() { _ = gs.Serve(rpcListener(l, maxRPCConns, maxRPCHandshakes, true, nil, nil)) }()
	t.Cleanup(gs.Stop)

	conn := func(id mtls.Identity) (*grpc.ClientConn, error) {
		cli := mtlstest.Load(t, mtlstest.Of(dir, id))
		cc, err := grpc.NewClient(l.Addr().String(), grpc.WithTransportCredentials(credentials.NewTLS(cli.Client("127.0.0.1"))))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err = healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{})
		if err != nil {
			cc.Close()
			return nil, err
		}
		return cc, nil
	}
	proxy := mtls.Identity{Role: mtls.RoleProxy, ID: 2}
	var held []*grpc.ClientConn
	t.Cleanup(func() {
		for _, cc := range held {
			cc.Close()
		}
	})
	for i := range maxRPCConnsPerIdentity {
		cc, err := conn(proxy)
		if err != nil {
			t.Fatalf("proxy connection %d: %v", i, err)
		}
		held = append(held, cc)
	}
	if cc, err := conn(proxy); err == nil {
		cc.Close()
		t.Fatalf("proxy 2 got a connection past %d", maxRPCConnsPerIdentity)
	}
	for _, id := range []mtls.Identity{{Role: mtls.RoleNode, ID: 2}, {Role: mtls.RoleAdmin}} {
		cc, err := conn(id)
		if err != nil {
			t.Fatalf("%v refused while proxy 2 holds its cap: %v", id, err)
		}
		cc.Close()
	}
	held[0].Close()
	held = held[1:]
	deadline := time.Now().Add(5 * time.Second)
	for {
		cc, err := conn(proxy)
		if err == nil {
			held = append(held, cc)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("proxy 2 after closing a connection: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
