package replserver

import (
	"database/sql"
	"io"
	"net"
	"testing"
	"time"
)

// TestConnectionCap: a local process holding connections open gets at
// most MaxPending of them before login. Silent strangers give way,
// oldest first, to a new connection (they held the node's own MariaDB
// out before); once MaxConns have logged in, the next connection reads
// MariaDB's ERR 1040 instead of the greeting, and a slot freed is usable
// again.
func TestConnectionCap(t *testing.T) {
	cfg := DefaultConfig()
	cfg.User, cfg.Password, cfg.ServerID, cfg.MaxConns, cfg.MaxPending = testUser, testPassword, endpointID, 2, 2
	s, err := New(cfg, NewMemorySource(0))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Listen(); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	first := func() (net.Conn, byte) {
		c, err := net.DialTimeout("tcp", s.Addr(), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		hdr := make([]byte, 5)
		if _, err := io.ReadFull(c, hdr); err != nil {
			t.Fatal(err)
		}
		return c, hdr[4] // 0x0a: a greeting; 0xff: ERR
	}
	a, ka := first()
	b, kb := first()
	if ka != 0x0a || kb != 0x0a {
		t.Fatalf("first two connections got %#x %#x, want greetings", ka, kb)
	}
	c, kc := first()
	if kc != 0x0a {
		t.Fatalf("a third connection got %#x while two strangers held the slots, want a greeting", kc)
	}
	_ = a.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadAll(a); err != nil {
		t.Fatalf("the oldest stranger was not closed for the newcomer: %v", err)
	}
	a.Close()
	b.Close()
	c.Close()

	// Two logged-in connections fill the cap: the next is refused.
	var held []*sql.Conn
	for range 2 {
		db := openAs(t, s.Addr(), testUser, testPassword, nil)
		conn, err := db.Conn(ctxT(t))
		if err != nil {
			t.Fatal(err)
		}
		if err := conn.PingContext(ctxT(t)); err != nil {
			t.Fatal(err)
		}
		held = append(held, conn)
	}
	d, kd := first()
	rest, _ := io.ReadAll(d)
	d.Close()
	if kd != 0xff || len(rest) < 2 || rest[0] != 0x10 || rest[1] != 0x04 {
		t.Fatalf("with both slots logged in a connection got %#x %x, want ERR 1040", kd, rest)
	}
	for _, conn := range held {
		conn.Close()
	}
	await(t, 5*time.Second, func() (bool, string) {
		d, err := net.DialTimeout("tcp", s.Addr(), 5*time.Second)
		if err != nil {
			return false, err.Error()
		}
		defer d.Close()
		_ = d.SetReadDeadline(time.Now().Add(5 * time.Second))
		hdr := make([]byte, 5)
		if _, err := io.ReadFull(d, hdr); err != nil {
			return false, err.Error()
		}
		return hdr[4] == 0x0a, "still refused after two connections closed"
	})
}
