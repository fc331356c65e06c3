package auth

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"
)

// TestUnreachableMaster: with no address answering, a lookup and
// MaxAllowedPacket are ErrUnavailable naming the address that failed, and
// a max_allowed_packet read before is served stale rather than nothing.
func TestUnreachableMaster(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // a loopback port nobody listens on: refused at once
	s := New(Config{User: "u", Password: "p", Addrs: func() []string { return []string{addr} }})
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := s.fetch(ctx, "app"); !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), addr) {
		t.Fatalf("fetch: %v", err)
	}
	if _, err := s.MaxAllowedPacket(ctx); !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), addr) {
		t.Fatalf("MaxAllowedPacket: %v", err)
	}
	s.mu.Lock()
	s.maxPacket, s.packetAt = 4096, time.Now().Add(-time.Hour)
	s.mu.Unlock()
	if n, err := s.MaxAllowedPacket(ctx); n != 4096 || err != nil {
		t.Fatalf("stale MaxAllowedPacket: %d, %v", n, err)
	}
}
