package node

import (
	"context"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/protobuf/proto"

	"phxgo/binlogd/mtls"
	"phxgo/binlogd/mtls/mtlstest"
)

// rawCodec sends a *[]byte as it is and reads an answer into one; the
// server, which gets it by the content subtype too, reads protobuf.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) {
	if b, ok := v.(*[]byte); ok {
		return *b, nil
	}
	return proto.Marshal(v.(proto.Message))
}

func (rawCodec) Unmarshal(b []byte, v any) error {
	if p, ok := v.(*[]byte); ok {
		*p = append([]byte(nil), b...)
		return nil
	}
	return proto.Unmarshal(b, v.(proto.Message))
}
func (rawCodec) Name() string { return "phxgo-test-raw" }

// paddedRequest is an empty protobuf message with an unknown bytes field
// of n bytes: every request type takes it.
func paddedRequest(n int) []byte {
	msg := []byte{15<<3 | 2}
	for l := n; ; l >>= 7 {
		if l < 0x80 {
			msg = append(msg, byte(l))
			break
		}
		msg = append(msg, byte(l)|0x80)
	}
	return append(msg, make([]byte, n)...)
}

// A proxy's certificate could make binlogd read a request as big as a
// Paxos Promise may be (up to 1 GiB) into memory before any interceptor
// saw who sent it: one 900 MiB Status call grew a node to 2.8 GB
// (red-team test, session 39). A connection that is not a node's is
// closed past maxPeerRequestBytes in open streams; a node keeps the full
// MaxRecvMsgSize, and small requests pass.
func TestRPCRequestCapForNonNodes(t *testing.T) {
	encoding.RegisterCodec(rawCodec{})
	dir := mtlstest.MakeCA(t, 2)
	srv := mtlstest.Load(t, mtlstest.Files(dir, 1))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer(grpc.MaxRecvMsgSize(64<<20),
		grpc.Creds(establishOnHandshake{credentials.NewTLS(srv.Server())}))
	healthpb.RegisterHealthServer(gs, health.NewServer())
	go func() { _ = gs.Serve(rpcListener(l, maxRPCConns, maxRPCHandshakes, true, nil, nil)) }()
	t.Cleanup(gs.Stop)

	check := func(id mtls.Identity, size int) error {
		cli := mtlstest.Load(t, mtlstest.Of(dir, id))
		cc, err := grpc.NewClient(l.Addr().String(), grpc.WithTransportCredentials(credentials.NewTLS(cli.Client("127.0.0.1"))),
			grpc.WithDefaultCallOptions(grpc.CallContentSubtype(rawCodec{}.Name()), grpc.MaxCallSendMsgSize(128<<20)))
		if err != nil {
			t.Fatal(err)
		}
		defer cc.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		req, out := paddedRequest(size), []byte(nil)
		return cc.Invoke(ctx, healthpb.Health_Check_FullMethodName, &req, &out)
	}
	proxy := mtls.Identity{Role: mtls.RoleProxy, ID: 2}
	node := mtls.Identity{Role: mtls.RoleNode, ID: 2}
	admin := mtls.Identity{Role: mtls.RoleAdmin}
	for _, id := range []mtls.Identity{proxy, admin, node} {
		if err := check(id, 1000); err != nil {
			t.Fatalf("%v: a small request: %v", id, err)
		}
	}
	for _, id := range []mtls.Identity{proxy, admin} {
		if err := check(id, 8<<20); err == nil {
			t.Fatalf("%v: an 8 MiB request was read and answered, want the connection closed past %d bytes", id, maxPeerRequestBytes)
		}
	}
	if err := check(node, 8<<20); err != nil {
		t.Fatalf("a node's 8 MiB request: %v", err)
	}
}
