package connevict

import (
	"container/list"
	"net"
	"slices"
	"testing"
)

type fakeConn struct{ host, name string }

func listOf(cs ...fakeConn) *list.List {
	l := list.New()
	for _, c := range cs {
		l.PushBack(c)
	}
	return l
}

func TestOldestTakesFromTheBusiestHost(t *testing.T) {
	host := func(c fakeConn) string { return c.host }
	cases := []struct {
		conns []fakeConn
		want  string
	}{
		{nil, ""},
		{[]fakeConn{{"10.0.0.1", "a"}}, "a"},
		// The oldest overall belongs to a host with fewer: the flood's oldest goes.
		{[]fakeConn{{"10.0.0.2", "client"}, {"10.0.0.1", "f1"}, {"10.0.0.1", "f2"}}, "f1"},
		// One host (loopback): simply the oldest.
		{[]fakeConn{{"127.0.0.1", "a"}, {"127.0.0.1", "b"}}, "a"},
		// A tie goes to the smallest host, whatever the map order.
		{[]fakeConn{{"10.0.0.9", "x"}, {"10.0.0.3", "y"}}, "y"},
	}
	for _, c := range cases {
		for range 20 { // map iteration order varies between runs
			e := Oldest(listOf(c.conns...), host)
			got := ""
			if e != nil {
				got = e.Value.(fakeConn).name
			}
			if got != c.want {
				t.Fatalf("Oldest(%v) = %q, want %q", c.conns, got, c.want)
			}
		}
	}
}

func TestBusiestHost(t *testing.T) {
	if h, ok := BusiestHost(slices.Values([]string(nil))); ok || h != "" {
		t.Fatalf("no hosts: got %q, %v", h, ok)
	}
	if h, ok := BusiestHost(slices.Values([]string{"b", "a", "b"})); !ok || h != "b" {
		t.Fatalf("got %q, %v, want b", h, ok)
	}
}

func TestHost(t *testing.T) {
	for _, c := range []struct {
		addr net.Addr
		want string
	}{
		{nil, ""},
		{&net.TCPAddr{IP: net.IPv4(127, 0, 0, 2), Port: 3306}, "127.0.0.2"},
		{&net.TCPAddr{IP: net.ParseIP("::1"), Port: 1}, "::1"},
		{&net.UnixAddr{Name: "/run/x.sock", Net: "unix"}, "/run/x.sock"},
	} {
		if got := Host(c.addr); got != c.want {
			t.Errorf("Host(%v) = %q, want %q", c.addr, got, c.want)
		}
	}
}
