package main

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"

	"phxgo/binlogd/mtls"
	"phxgo/binlogd/mtls/mtlstest"
	pb "phxgo/proto"
	"phxgo/sqlproxy"
)

// TestBinlogdLinkWantsOwnNode is the red-team finding: sqlproxy 2 took
// the Status stream (who is master, where to forward) from whoever held
// a certificate of the CA for its binlogd's host. Now node 2's is needed:
// node 3's and proxy 2's are refused before a call; node 2's is taken.
func TestBinlogdLinkWantsOwnNode(t *testing.T) {
	ca := mtlstest.MakeCA(t, 3)
	creds := binlogdCreds(sqlproxy.NewTLS(mtlstest.Load(t, mtlstest.Of(ca, mtls.Identity{Role: mtls.RoleProxy, ID: 2}))))
	status := func(server mtls.Files) (calls int64, err error) {
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		n := mtlstest.Impostor(t, lis, mtlstest.Load(t, server))
		cc, err := grpc.NewClient(lis.Addr().String(), creds)
		if err != nil {
			t.Fatal(err)
		}
		defer cc.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err = pb.NewAdminClient(cc).Status(ctx, &pb.StatusRequest{})
		return n(), err
	}
	for name, c := range map[string]struct {
		files mtls.Files
		want  string
	}{
		"node 3":  {mtlstest.Files(ca, 3), "presented node 3, want node 2"},
		"proxy 2": {mtlstest.Of(ca, mtls.Identity{Role: mtls.RoleProxy, ID: 2}), "presented proxy 2, want node 2"},
	} {
		calls, err := status(c.files)
		if calls != 0 || err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s on the binlogd address: %d calls, err %v", name, calls, err)
		}
	}
	if calls, _ := status(mtlstest.Files(ca, 2)); calls != 1 {
		t.Errorf("node 2's binlogd got %d calls, want 1", calls)
	}
}
