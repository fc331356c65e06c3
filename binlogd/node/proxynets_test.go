package node

import (
	"context"
	"net/netip"
	"testing"

	"phxgo/binlogd/config"
	"phxgo/binlogd/mysqld"
)

// TestProxyNetworks: the value is the operator's entries, then the
// members' addresses not among them; witnesses run no proxy; values are
// compared as sets.
func TestProxyNetworks(t *testing.T) {
	ips := []netip.Addr{netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2"), netip.MustParseAddr("fd00::3")}
	if got := proxyNetworks(nil, ips); got != "10.0.0.1,10.0.0.2,fd00::3" {
		t.Errorf("members only: %q", got)
	}
	if got := proxyNetworks([]string{"10.0.0.2", "192.168.7.0/24"}, ips); got != "10.0.0.2,192.168.7.0/24,10.0.0.1,fd00::3" {
		t.Errorf("with the operator's: %q", got)
	}
	for _, tc := range []struct {
		a, b string
		same bool
	}{
		{"10.0.0.1,10.0.0.2", "10.0.0.2, 10.0.0.1", true},
		{"", "", true},
		{"10.0.0.1", "10.0.0.1,10.0.0.2", false},
		{"localhost,10.0.0.1", "10.0.0.1", false},
	} {
		if got := sameNetworks(tc.a, tc.b); got != tc.same {
			t.Errorf("sameNetworks(%q, %q) = %v", tc.a, tc.b, got)
		}
	}
	ms := proxyMembers([]config.Member{{ID: 1, MySQLAddr: "10.0.0.1:3306"}, {ID: 2, GRPCAddr: "10.0.0.9:7000", Witness: true}, {ID: 3, Learner: true}})
	if len(ms) != 2 || ms[0].ID != 1 || ms[1].ID != 3 {
		t.Errorf("proxyMembers: %+v", ms)
	}
	got, err := memberIPs(context.Background(), ms, lookupHost)
	if err != nil || len(got) != 1 || got[0].String() != "10.0.0.1" {
		t.Errorf("memberIPs: %v, %v", got, err)
	}
}

// TestSetProxyNetworks: against a real MariaDB the variable is set once
// and left alone while it holds the same entries.
func TestSetProxyNetworks(t *testing.T) {
	inst := mysqld.NewTestInstance(t, 1)
	db, err := inst.DB("")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	for i, tc := range []struct {
		want    string
		changed bool
	}{{"127.0.0.1,10.0.0.0/8", true}, {"10.0.0.0/8, 127.0.0.1", false}, {"127.0.0.1", true}} {
		changed, err := setProxyNetworks(ctx, db, tc.want)
		if err != nil || changed != tc.changed {
			t.Fatalf("%d: set %q: changed %v, %v; want changed %v", i, tc.want, changed, err, tc.changed)
		}
		var cur string
		if err := db.QueryRowContext(ctx, "SELECT @@GLOBAL.proxy_protocol_networks").Scan(&cur); err != nil || !sameNetworks(cur, tc.want) {
			t.Fatalf("%d: in force %q (%v), want %q", i, cur, err, tc.want)
		}
	}
	if _, err := setProxyNetworks(ctx, db, "10.0.0.1' OR 1"); err == nil {
		t.Fatal("a quote was set")
	}
}
