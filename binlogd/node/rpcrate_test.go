package node

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"phxgo/binlogd/config"
	"phxgo/binlogd/mtls/mtlstest"
	"phxgo/internal/addrrate"
	"phxgo/internal/testkit"
)

// The stranger floods from 127.0.0.2; the peer, listed as exempt,
// comes from 127.0.0.1 (every test process shares it).
var (
	strangerIP = net.ParseIP("127.0.0.2")
	otherIP    = net.ParseIP("127.0.0.3")
)

// stepClock is a clock that moves only when the test steps it: token
// buckets refill only then, whatever the host's speed.
type stepClock struct{ d atomic.Int64 }

func (c *stepClock) now() time.Time       { return time.Unix(1_000_000, c.d.Load()) }
func (c *stepClock) step(d time.Duration) { c.d.Add(int64(d)) }

// countingCreds counts, by remote host, the server handshakes that
// reach crypto/tls: the key exchange a rate-limited connection saves.
type countingCreds struct {
	credentials.TransportCredentials
	c *handshakeCount
}

type handshakeCount struct {
	mu sync.Mutex
	n  map[string]int
}

func (h *handshakeCount) get(host string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n[host]
}

func (c countingCreds) ServerHandshake(raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	host, _, _ := net.SplitHostPort(raw.RemoteAddr().String())
	c.c.mu.Lock()
	c.c.n[host]++
	c.c.mu.Unlock()
	return c.TransportCredentials.ServerHandshake(raw)
}

func (c countingCreds) Clone() credentials.TransportCredentials {
	return countingCreds{c.TransportCredentials.Clone(), c.c}
}

// rateLimitedServer is tlsHealthServerListener with lim on the clock
// now, and the handshakes that reached crypto/tls counted.
func rateLimitedServer(t *testing.T, lim *addrrate.Limiter, now func() time.Time) (string, grpc.DialOption, *capListener, *handshakeCount) {
	t.Helper()
	ca := mtlstest.MakeCA(t, 2)
	srv := mtlstest.Load(t, mtlstest.Files(ca, 1))
	cli := mtlstest.Load(t, mtlstest.Files(ca, 2))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	count := &handshakeCount{n: map[string]int{}}
	gs := grpc.NewServer(grpc.ConnectionTimeout(time.Minute),
		grpc.Creds(establishOnHandshake{countingCreds{credentials.NewTLS(srv.Server()), count}}))
	healthpb.RegisterHealthServer(gs, health.NewServer())
	rl := rpcListener(l, maxRPCConns, maxRPCHandshakes, true, lim, nil)
	rl.now = now
	go func() { _ = gs.Serve(rl) }()
	t.Cleanup(gs.Stop)
	return l.Addr().String(), grpc.WithTransportCredentials(credentials.NewTLS(cli.Client("127.0.0.1"))), rl, count
}

func dialFromIP(src net.IP) func(context.Context, string) (net.Conn, error) {
	return func(ctx context.Context, addr string) (net.Conn, error) {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: src}}
		return d.DialContext(ctx, "tcp", addr)
	}
}

// A flood of ClientHellos from one address reaches crypto/tls only
// within the budget: the node-wide burst before the pressure shows
// (rpcPressureBurst), then the address's own refill, which a stopped
// clock holds at none; every other connection is closed at accept. A
// peer's address, exempt, still gets in, though a stranger from a new
// address does not (the table of addresses is full, as under a flood
// from many); once the flood has ended and the buckets have refilled, a
// client from the flood's own address gets in again.
func TestRPCListenerRateLimitsHandshakes(t *testing.T) {
	cfg := rpcHandshakeBudget()
	cfg.MaxAddrs = 1 // the flood's address fills the table
	lim := addrrate.New(cfg)
	lim.SetExempt([]netip.Addr{netip.MustParseAddr("127.0.0.1")})
	var clock stepClock
	addr, opt, rl, started := rateLimitedServer(t, lim, clock.now)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	hello := clientHello(t)
	const n = 1000
	var flood []net.Conn
	defer func() {
		for _, c := range flood {
			c.Close()
		}
	}()
	for i := range n {
		c, err := dialFromIP(strangerIP)(ctx, addr)
		if err != nil {
			t.Fatalf("flood connection %d: %v", i, err)
		}
		flood = append(flood, c)
		_, _ = c.Write(hello) // a refused one may be closed already
	}
	testkit.Await(t, ctx, "every flood connection to be handshaken or closed at accept", func() bool {
		return started.get("127.0.0.2")+int(rl.ratelimited.Load()) >= n
	})
	if got := started.get("127.0.0.2"); got > rpcPressureBurst {
		t.Fatalf("%d of %d ClientHellos from one address reached crypto/tls, want at most the burst of %d (%d closed at accept)",
			got, n, rpcPressureBurst, rl.ratelimited.Load())
	}
	t.Logf("%d of %d handshakes reached crypto/tls, %d closed at accept", started.get("127.0.0.2"), n, rl.ratelimited.Load())

	// The peer's address is exempt.
	if err := healthCheck(ctx, addr, opt); err != nil {
		t.Fatalf("the peer's health check during the flood: %v", err)
	}
	// A stranger from a new address has no budget: closed at accept.
	before := rl.ratelimited.Load()
	c, err := dialFromIP(otherIP)(ctx, addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil || isTimeout(err) {
		t.Fatalf("a stranger from a new address under pressure: read %v, want it closed", err)
	}
	if rl.ratelimited.Load() != before+1 || started.get("127.0.0.3") != 0 {
		t.Fatalf("a stranger from a new address: %d rate-limited (want %d), %d handshakes (want 0)",
			rl.ratelimited.Load(), before+1, started.get("127.0.0.3"))
	}

	// The flood ends; ten seconds later its address has its budget back.
	for _, c := range flood {
		c.Close()
	}
	clock.step(10 * time.Second)
	cc, err := grpc.NewClient(addr, opt, grpc.WithContextDialer(dialFromIP(strangerIP)))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	if _, err := healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatalf("a client from the flood's address after the flood: %v", err)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func TestMemberIPs(t *testing.T) {
	members := []config.Member{
		{ID: 1, GRPCAddr: "10.0.0.1:7000", MySQLAddr: "10.0.0.1:3306", ProxyAddr: "[::ffff:10.0.0.5]:3307"},
		{ID: 2, GRPCAddr: "node2.example:7000", MySQLAddr: "[2001:db8::2]:3306"},
		{ID: 3, GRPCAddr: "gone.example:7000", MySQLAddr: "nonsense"},
	}
	lookup := func(_ context.Context, host string) ([]netip.Addr, error) {
		if host == "node2.example" {
			return []netip.Addr{netip.MustParseAddr("10.0.0.2"), netip.MustParseAddr("10.0.0.1")}, nil
		}
		return nil, errors.New("no such host")
	}
	got, err := memberIPs(context.Background(), members, lookup)
	want := []netip.Addr{netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2"),
		netip.MustParseAddr("10.0.0.5"), netip.MustParseAddr("2001:db8::2")}
	if len(got) != len(want) {
		t.Fatalf("memberIPs = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("memberIPs = %v, want %v", got, want)
		}
	}
	if err == nil {
		t.Fatal("an unresolvable member name gave no error")
	}
}
