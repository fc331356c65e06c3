package netns

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"testing"
	"time"
)

// TestBridgeHosts: two host namespaces on a bridge reach each other's
// bridge address, not each other's loopback, and not from the root
// namespace; a port taken down cuts the host off, up again restores it.
func TestBridgeHosts(t *testing.T) {
	if err := Supported(); err != nil {
		t.Skipf("skipping: %v", err)
	}
	ctx := context.Background()
	prefix := fmt.Sprintf("phxbrtest-%d-", os.Getpid())
	br, err := CreateBridge(ctx, prefix+"br")
	if err != nil {
		t.Fatal(err)
	}
	defer br.Close()
	var hosts []*NS
	for i := 1; i <= 2; i++ {
		h, err := Create(ctx, fmt.Sprintf("%sh%d", prefix, i))
		if err != nil {
			t.Fatal(err)
		}
		defer h.Close()
		if err := br.Attach(ctx, h, fmt.Sprintf("p%d", i), fmt.Sprintf("10.231.250.%d/24", i)); err != nil {
			t.Fatal(err)
		}
		hosts = append(hosts, h)
	}
	l, err := hosts[1].Listen("tcp", "10.231.250.2:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go echo(l)
	lo, err := hosts[1].Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer lo.Close()
	go echo(lo)

	await(t, "h1 -> h2 over the bridge", 5*time.Second, func() error { return roundTrip(ctx, hosts[0], "", l.Addr().String()) })
	if err := roundTrip(ctx, hosts[0], "", lo.Addr().String()); err == nil {
		t.Fatal("h1 reached h2's loopback listener: the hosts share a loopback")
	}
	if c, err := net.DialTimeout("tcp", l.Addr().String(), 200*time.Millisecond); err == nil {
		c.Close()
		t.Fatal("the root namespace reached a host's bridge address")
	}
	if err := br.SetPort(ctx, hosts[1], false); err != nil {
		t.Fatal(err)
	}
	if err := roundTrip(ctx, hosts[0], "", l.Addr().String()); err == nil {
		t.Fatal("h1 still reaches h2 with h2's port down")
	}
	if err := br.SetPort(ctx, hosts[1], true); err != nil {
		t.Fatal(err)
	}
	await(t, "h1 -> h2 after the port is up", 10*time.Second, func() error { return roundTrip(ctx, hosts[0], "", l.Addr().String()) })

	// A group left by a dead run goes; this (live) run's stays.
	p, err := os.StartProcess("/bin/true", []string{"true"}, &os.ProcAttr{})
	if err != nil {
		t.Fatal(err)
	}
	_, _ = p.Wait()
	stale := fmt.Sprintf("phxbrtest-%d-h1", p.Pid)
	if _, err := Create(ctx, stale); err != nil {
		t.Fatal(err)
	}
	removed, err := RemoveStaleGroup(ctx, "phxbrtest-")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(removed, stale) || slices.Contains(removed, hosts[0].Name) {
		t.Fatalf("RemoveStaleGroup removed %v (want %s and not the live run's)", removed, stale)
	}
	if names, _ := List(ctx); slices.Contains(names, stale) {
		t.Fatal(errors.New("stale namespace still listed"))
	}
}
