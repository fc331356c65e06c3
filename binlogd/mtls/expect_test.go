package mtls_test

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	pb "google.golang.org/grpc/health/grpc_health_v1"

	"phxgo/binlogd/mtls"
	"phxgo/binlogd/mtls/mtlstest"
)

// handshake runs a TLS handshake between a server presenting srv and a
// client with ClientFor(addr, want); it returns the client's error.
func handshake(t *testing.T, srv, cli *mtls.Material, want mtls.Expect) error {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Close()
	go func() {
		c, err := lis.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		tc := tls.Server(c, srv.Server())
		tc.SetDeadline(time.Now().Add(5 * time.Second))
		tc.Handshake()
		tc.Read(make([]byte, 1)) // until the client closes
	}()
	c, err := tls.Dial("tcp", lis.Addr().String(), cli.ClientFor(lis.Addr().String(), want))
	if err != nil {
		return err
	}
	c.Close()
	return nil
}

func TestClientForChecksIdentity(t *testing.T) {
	dir := mtlstest.MakeCA(t, 3)
	other := mtlstest.MakeCA(t, 3)
	load := func(d string, id mtls.Identity) *mtls.Material { return mtlstest.Load(t, mtlstest.Of(d, id)) }
	node1 := load(dir, mtls.Identity{Role: mtls.RoleNode, ID: 1})
	node3 := load(dir, mtls.Identity{Role: mtls.RoleNode, ID: 3})
	proxy3 := load(dir, mtls.Identity{Role: mtls.RoleProxy, ID: 3})
	admin := load(dir, mtls.Identity{Role: mtls.RoleAdmin})
	foreign3 := load(other, mtls.Identity{Role: mtls.RoleNode, ID: 3})
	cases := []struct {
		name   string
		server *mtls.Material
		want   mtls.Expect
		err    error // nil: the handshake succeeds
		says   string
	}{
		{"right node", node3, mtls.ExpectNode(3), nil, ""},
		{"any node", node3, mtls.ExpectNode(0), nil, ""},
		{"right proxy", proxy3, mtls.ExpectProxy(3), nil, ""},
		{"proxy for node", proxy3, mtls.ExpectNode(3), mtls.ErrWrongPeer, "presented proxy 3, want node 3"},
		{"proxy for any node", proxy3, mtls.ExpectNode(0), mtls.ErrWrongPeer, "presented proxy 3, want any node"},
		{"admin for node", admin, mtls.ExpectNode(0), mtls.ErrWrongPeer, "presented admin, want any node"},
		{"other node", node1, mtls.ExpectNode(3), mtls.ErrWrongPeer, "presented node 1, want node 3"},
		{"node for proxy", node3, mtls.ExpectProxy(3), mtls.ErrWrongPeer, "presented node 3, want proxy 3"},
		{"other CA", foreign3, mtls.ExpectNode(3), nil, "certificate signed by unknown authority"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := handshake(t, c.server, node1, c.want)
			switch {
			case c.err == nil && c.says == "":
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
			case err == nil:
				t.Fatal("accepted")
			case c.err != nil && !errors.Is(err, c.err):
				t.Fatalf("err %v, want %v", err, c.err)
			case !strings.Contains(err.Error(), c.says):
				t.Fatalf("err %q does not say %q", err, c.says)
			}
			if c.err != nil && !strings.Contains(err.Error(), "peer at 127.0.0.1:") {
				t.Fatalf("err %q does not name the address", err)
			}
		})
	}
}

// TestClientCredentialsRefuseImpostor: a gRPC dial with ClientCredentials
// fails before any call reaches a server with the wrong identity, and a
// reloadable one follows Store.
func TestClientCredentialsRefuseImpostor(t *testing.T) {
	dir := mtlstest.MakeCA(t, 3)
	node1 := mtlstest.Load(t, mtlstest.Files(dir, 1))
	proxy3 := mtlstest.Load(t, mtlstest.Of(dir, mtls.Identity{Role: mtls.RoleProxy, ID: 3}))
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	calls := mtlstest.Impostor(t, lis, proxy3)
	for name, creds := range map[string]credentials.TransportCredentials{
		"material":   node1.ClientCredentials(mtls.ExpectNode(3)),
		"reloadable": mtls.NewReloadable(node1).ClientCredentials(mtls.ExpectNode(3)),
	} {
		cc, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(creds))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err = pb.NewHealthClient(cc).Check(ctx, &pb.HealthCheckRequest{})
		cancel()
		cc.Close()
		if err == nil || !strings.Contains(err.Error(), "presented proxy 3, want node 3") {
			t.Fatalf("%s: call to an impostor: err %v", name, err)
		}
	}
	if n := calls(); n != 0 {
		t.Fatalf("%d calls reached the impostor", n)
	}
}
