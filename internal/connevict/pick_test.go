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
		// A tie goes to the oldest, whatever the hosts' names and the
		// map order: a flood of one connection per address evicts its
		// own older ones before a client's fresh login (session 37).
		{[]fakeConn{{"10.0.0.9", "x"}, {"10.0.0.3", "y"}}, "x"},
		{[]fakeConn{{"10.0.0.200", "flood1"}, {"10.0.0.201", "flood2"}, {"10.0.0.1", "client"}}, "flood1"},
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

func TestBusiestHosts(t *testing.T) {
	if got := BusiestHosts(slices.Values([]string(nil))); len(got) != 0 {
		t.Fatalf("no hosts: got %v", got)
	}
	if got := BusiestHosts(slices.Values([]string{"b", "a", "b"})); len(got) != 1 || !got["b"] {
		t.Fatalf("got %v, want b", got)
	}
	if got := BusiestHosts(slices.Values([]string{"b", "a", "c", "a", "b"})); len(got) != 2 || !got["a"] || !got["b"] {
		t.Fatalf("got %v, want a and b", got)
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
		{&net.TCPAddr{IP: net.ParseIP("2001:db8:1:2:aaaa::1"), Port: 1}, "2001:db8:1:2::/64"},
		{&net.TCPAddr{IP: net.ParseIP("2001:db8:1:2:bbbb::9"), Port: 1}, "2001:db8:1:2::/64"},
		{&net.TCPAddr{IP: net.ParseIP("::ffff:10.0.0.1"), Port: 1}, "10.0.0.1"},
		{&net.UnixAddr{Name: "/run/x.sock", Net: "unix"}, "/run/x.sock"},
	} {
		if got := Host(c.addr); got != c.want {
			t.Errorf("Host(%v) = %q, want %q", c.addr, got, c.want)
		}
	}
}
