package addrrate

import (
	"net/netip"
	"testing"
	"time"
)

var t0 = time.Unix(1_000_000, 0)

func testConfig() Config {
	return Config{Rate: 10, Burst: 4, PressureRate: 100, PressureBurst: 8, MaxAddrs: 16}
}

// allowN asks n times from a at now and counts the allowed.
func allowN(l *Limiter, a netip.Addr, now time.Time, n int) int {
	ok := 0
	for range n {
		if l.Allow(a, now) {
			ok++
		}
	}
	return ok
}

var (
	flooder = netip.MustParseAddr("192.0.2.1")
	other   = netip.MustParseAddr("192.0.2.2")
	peer    = netip.MustParseAddr("192.0.2.9")
)

// Without pressure nobody is refused: one address may make the whole
// node-wide burst, far over its own.
func TestNoPressureNoRefusal(t *testing.T) {
	l := New(testConfig())
	if got := allowN(l, flooder, t0, 8); got != 8 {
		t.Fatalf("allowed %d of the node-wide burst of 8, want all", got)
	}
}

// Under pressure (the node-wide bucket run empty) an address gets its
// own budget, the burst, then Rate a second, whatever the node-wide
// bucket refills meanwhile; another address keeps its own. Once the
// flood pauses long enough for the node-wide bucket to refill to half,
// the pressure is off.
func TestPressureLimitsEachAddress(t *testing.T) {
	l := New(testConfig())
	// 1,000 at one instant: 8 pass without pressure (4 of them from the
	// address's own bucket), then none.
	if got := allowN(l, flooder, t0, 1000); got != 8 {
		t.Fatalf("flood at one instant: allowed %d, want the node-wide burst 8", got)
	}
	if got := allowN(l, other, t0, 10); got != 4 {
		t.Fatalf("another address under pressure: allowed %d, want its burst 4", got)
	}
	// A second of flood, 50 every 10 ms: the node-wide bucket refills a
	// token every 10 ms, which is not the flood's; its own bucket refills
	// 10 in the second.
	now := t0
	got := 0
	for range 100 {
		now = now.Add(10 * time.Millisecond)
		got += allowN(l, flooder, now, 50)
	}
	if got < 9 || got > 10 {
		t.Fatalf("a second of flood under pressure: allowed %d, want its own refill, 10", got)
	}
	// 30 ms of calm: 3 node-wide tokens, under half: still pressure.
	now = now.Add(30 * time.Millisecond)
	if got := allowN(l, other, now, 10); got != 4 {
		t.Fatalf("after 30 ms of calm: allowed %d, want the address's 4 (refilled)", got)
	}
	// 50 ms of calm: 5 node-wide tokens, half of 8: no pressure.
	now = now.Add(50 * time.Millisecond)
	if got := allowN(l, flooder, now, 1000); got != 5 {
		t.Fatalf("after 50 ms of calm: allowed %d, want the node-wide 5", got)
	}
	// Ten seconds after, everything has refilled.
	now = now.Add(10 * time.Second)
	if !l.Allow(flooder, now) {
		t.Fatal("the flooder's address refused after its bucket refilled")
	}
}

func TestExempt(t *testing.T) {
	l := New(testConfig())
	l.SetExempt([]netip.Addr{peer, netip.MustParseAddr("2001:db8::9")})
	allowN(l, flooder, t0, 1000)
	if got := allowN(l, peer, t0, 1000); got != 1000 {
		t.Fatalf("exempt address under pressure: allowed %d of 1000", got)
	}
	if !l.Allow(netip.MustParseAddr("::ffff:192.0.2.9"), t0) {
		t.Fatal("an exempt IPv4 address, IPv4-mapped, refused")
	}
	if l.Len() != 1 {
		t.Fatalf("%d buckets, want the flooder's only: exempt ones take none", l.Len())
	}
	l.SetExempt(nil)
	if got := allowN(l, peer, t0, 1000); got != 4 {
		t.Fatalf("no longer exempt: allowed %d, want its burst 4", got)
	}
}

// An IPv6 host's budget is its /64's: the addresses a single host can
// pick from share one.
func TestIPv6CountsBySlash64(t *testing.T) {
	l := New(testConfig())
	allowN(l, flooder, t0, 1000) // pressure
	ok := 0
	for i := range 100 {
		a := netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, byte(i)})
		if l.Allow(a, t0) {
			ok++
		}
	}
	if ok != 4 {
		t.Fatalf("100 addresses of one /64: allowed %d, want one budget's 4", ok)
	}
	if !l.Allow(netip.MustParseAddr("2001:db8:0:2::1"), t0) {
		t.Fatal("another /64 refused")
	}
}

// A flood from ever new addresses keeps at most MaxAddrs buckets; idle
// (refilled) ones make room; with none refilled a newcomer is refused
// under pressure and allowed without.
func TestTableBounded(t *testing.T) {
	cfg := testConfig()
	l := New(cfg)
	addr := func(i int) netip.Addr { return netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}) }
	for i := range 10 * cfg.MaxAddrs {
		l.Allow(addr(i), t0)
		if l.Len() > cfg.MaxAddrs {
			t.Fatalf("%d buckets after %d addresses, want at most %d", l.Len(), i+1, cfg.MaxAddrs)
		}
	}
	newcomer := netip.MustParseAddr("198.51.100.1")
	if l.Allow(newcomer, t0) {
		t.Fatal("under pressure, with the table full of busy addresses, a newcomer was allowed")
	}
	// A second later every bucket has refilled: the sweep makes room
	// and the newcomer gets a bucket of its own.
	now := t0.Add(2 * time.Second)
	allowN(l, flooder, now, 1000) // pressure again
	if !l.Allow(newcomer, now) {
		t.Fatal("a newcomer refused once idle buckets could be dropped")
	}
	if l.Len() > cfg.MaxAddrs {
		t.Fatalf("%d buckets, want at most %d", l.Len(), cfg.MaxAddrs)
	}
}

func TestClockBackRefillsNothing(t *testing.T) {
	l := New(testConfig())
	allowN(l, flooder, t0, 1000)
	if l.Allow(flooder, t0.Add(-time.Hour)) {
		t.Fatal("a clock that went back refilled the bucket")
	}
	if l.Allow(flooder, t0) {
		t.Fatal("back at the latest time: refilled")
	}
}

func TestInvalidAddrAllowed(t *testing.T) {
	l := New(testConfig())
	allowN(l, flooder, t0, 1000)
	if !l.Allow(netip.Addr{}, t0) {
		t.Fatal("a connection without an IP (Unix socket) refused")
	}
}

func TestValidate(t *testing.T) {
	if err := testConfig().Validate(); err != nil {
		t.Fatal(err)
	}
	c := testConfig()
	c.PressureBurst = 0
	if err := c.Validate(); err == nil {
		t.Fatal("PressureBurst 0 accepted")
	}
}
