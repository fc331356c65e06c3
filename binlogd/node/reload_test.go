package node

import (
	"context"
	"log/slog"
	"math/big"
	"os"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"phxgo/binlogd/mtls"
	"phxgo/binlogd/mtls/mtlstest"
	pb "phxgo/proto"
)

// TestReloadCertificate rotates a running node's certificate files and
// reloads: a new connection meets the new certificate, one opened before
// keeps working, and a broken file is refused with the file named while
// the last good certificate stays in use.
func TestReloadCertificate(t *testing.T) {
	ca := mtlstest.MakeCA(t, 1)
	files := mtlstest.Files(ca, 1)
	cfgs, nodes, _ := testNodes(t, []mtls.Files{files}, func(n *Node) { n.SetLogLevelVar(new(slog.LevelVar)) })
	n, addr := nodes[0], cfgs[0].Self().GRPCAddr
	adminOpt := DialOption(mtlstest.Load(t, mtls.DirFiles(ca, mtls.Identity{Role: mtls.RoleAdmin})))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// serial asks Status on cl and returns the serial of the server's leaf
	// certificate on that connection.
	serial := func(cl pb.AdminClient) *big.Int {
		t.Helper()
		var p peer.Peer
		if _, err := cl.Status(ctx, &pb.StatusRequest{}, grpc.Peer(&p), grpc.WaitForReady(true)); err != nil {
			t.Fatalf("Status: %v", err)
		}
		info, ok := p.AuthInfo.(credentials.TLSInfo)
		if !ok || len(info.State.PeerCertificates) == 0 {
			t.Fatalf("no TLS peer certificate: %#v", p.AuthInfo)
		}
		return info.State.PeerCertificates[0].SerialNumber
	}
	old, _ := dialAdmin(t, addr, adminOpt)
	oldSerial := serial(old)
	if oldSerial.Cmp(mtlstest.Load(t, files).Leaf.SerialNumber) != 0 {
		t.Fatalf("server presents serial %x, the file holds another", oldSerial)
	}

	// A new certificate for the same identity from the same CA, copied
	// over the node's files.
	newSerial := mtlstest.Reissue(t, ca, mtls.Identity{Role: mtls.RoleNode, ID: 1}, files)

	res, err := n.Reload("debug")
	if err != nil {
		t.Fatalf("Reload: %v", err)
	}
	if res.CertSerial != newSerial.Text(16) {
		t.Fatalf("Reload reports serial %s, want %x", res.CertSerial, newSerial)
	}
	fresh, _ := dialAdmin(t, addr, adminOpt)
	if got := serial(fresh); got.Cmp(newSerial) != 0 {
		t.Fatalf("a new connection after the reload met serial %x, want the new %x", got, newSerial)
	}
	if got := serial(old); got.Cmp(oldSerial) != 0 {
		t.Fatalf("the connection from before the reload now reports %x, want its own %x", got, oldSerial)
	}

	// A broken certificate file: refused, named, the new one stays.
	if err := os.WriteFile(files.Cert, []byte("not a certificate\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := n.Reload(""); err == nil || !strings.Contains(err.Error(), files.Cert) {
		t.Fatalf("Reload with a broken certificate file: %v, want an error naming %s", err, files.Cert)
	}
	// The same through Admin/Reload: INVALID_ARGUMENT with the reason.
	if _, err := old.Reload(ctx, &pb.ReloadRequest{}); status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), files.Cert) {
		t.Fatalf("Admin/Reload with a broken certificate file: %v", err)
	}
	if res.LogLevel != "debug" {
		t.Fatalf("level after Reload(debug): %q", res.LogLevel)
	}
	if _, err := n.Reload("loud"); err == nil || !strings.Contains(err.Error(), "loud") {
		t.Fatalf("Reload with a bad level: %v", err)
	}
	third, _ := dialAdmin(t, addr, adminOpt)
	if got := serial(third); got.Cmp(newSerial) != 0 {
		t.Fatalf("after a refused reload a new connection met %x, want the last good %x", got, newSerial)
	}
	if got := serial(old); got.Cmp(oldSerial) != 0 {
		t.Fatal("old connection broke")
	}
}
