package main

import (
	"context"
	"net"
	"path/filepath"
	"strings"
	"testing"

	"phxgo/binlogd/config"
	"phxgo/binlogd/mtls"
	"phxgo/binlogd/mtls/mtlstest"
)

// TestCommandsRefuseImpostor is the red-team finding: on a binlogd's
// address sits a server with proxy 3's certificate (the cluster CA's,
// valid for the host). Every operator command must refuse it at the
// handshake, before a call: it must not print its forged status, send it
// a switchover or a member change, or restore the bytes it streams.
func TestCommandsRefuseImpostor(t *testing.T) {
	ca := mtlstest.MakeCA(t, 3)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	calls := mtlstest.Impostor(t, lis, mtlstest.Load(t, mtlstest.Of(ca, mtls.Identity{Role: mtls.RoleProxy, ID: 3})))
	tlsDir := []string{"-tls-dir", ca}
	cases := map[string]func() error{
		"status":         func() error { return cmdStatus(append([]string{"-addr", addr}, tlsDir...)) },
		"switchover":     func() error { return cmdSwitchover(append([]string{"-addr", addr, "-to", "2"}, tlsDir...)) },
		"members list":   func() error { return cmdMembers(append([]string{"list", "-addr", addr}, tlsDir...)) },
		"members remove": func() error { return cmdMembers(append([]string{"remove", "-addr", addr, "-id", "2"}, tlsDir...)) },
		"reload":         func() error { return cmdReload(append([]string{"-addr", addr}, tlsDir...)) },
		"backup": func() error {
			return cmdBackup(append([]string{"-from", addr, "-out", filepath.Join(t.TempDir(), "b")}, tlsDir...))
		},
		"cluster status": func() error {
			var out strings.Builder
			cmdCluster(append([]string{"status", "-addr", addr}, tlsDir...), &out, &out)
			return errString(out.String())
		},
	}
	for name, run := range cases {
		err := run()
		if err == nil || !strings.Contains(err.Error(), "presented proxy 3, want any node") {
			t.Errorf("%s against an impostor: err %v", name, err)
		}
	}
	if n := calls(); n != 0 {
		t.Fatalf("%d calls reached the impostor", n)
	}
}

type errString string

func (e errString) Error() string { return string(e) }

// TestReseedSourceWantsTheMember: reseed (and recover) know each member's
// id, so a member's address must answer with that member's certificate:
// node 1's, valid for the host, is refused on node 3's address.
func TestReseedSourceWantsTheMember(t *testing.T) {
	ca := mtlstest.MakeCA(t, 3)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	calls := mtlstest.Impostor(t, lis, mtlstest.Load(t, mtlstest.Files(ca, 1)))
	cfg := &config.Config{ID: 2, Members: []config.Member{{ID: 2, GRPCAddr: "127.0.0.1:1"}, {ID: 3, GRPCAddr: lis.Addr().String()}}}
	creds, err := dialOptionFor(mtlstest.Files(ca, 2))
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = reseedSource(context.Background(), cfg, "", 0, creds)
	if err == nil || !strings.Contains(err.Error(), "presented node 1, want node 3") {
		t.Fatalf("reseed source among impostors: %v", err)
	}
	if id := memberAt(cfg, lis.Addr().String()); id != 3 {
		t.Fatalf("memberAt = %d, want 3", id)
	}
	if n := calls(); n != 0 {
		t.Fatalf("%d calls reached the impostor", n)
	}
}
