package mtlstest

import (
	"net"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	"phxgo/binlogd/mtls"
)

// Of is the files of identity id in a MakeCA directory (node, proxy or
// admin).
func Of(dir string, id mtls.Identity) mtls.Files { return mtls.DirFiles(dir, id) }

// Impostor serves gRPC with m's certificate on lis, as a holder of a
// valid cluster certificate of the wrong identity would: it answers
// nothing, but counts every call that reaches it (a client that checks
// whom it dialled must make none). It stops at the test's end.
func Impostor(t testing.TB, lis net.Listener, m *mtls.Material) (calls func() int64) {
	t.Helper()
	var n atomic.Int64
	srv := grpc.NewServer(grpc.Creds(credentials.NewTLS(m.Server())),
		grpc.UnknownServiceHandler(func(any, grpc.ServerStream) error {
			n.Add(1)
			return status.Error(codes.Unavailable, "impostor")
		}))
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	return n.Load
}
