package addrrate

import (
	"net/netip"
	"testing"
	"time"
)

// TestFailures: an address is refused after Burst failures, gets one more
// attempt every Every, counts IPv6 by /64, and other addresses are not
// touched; the table stays bounded and keeps the spent budgets.
func TestFailures(t *testing.T) {
	f, err := NewFailures(3, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(1000, 0)
	a := netip.MustParseAddr("192.0.2.1")
	other := netip.MustParseAddr("192.0.2.2")
	for i := range 3 {
		if blocked, _ := f.Blocked(a, "app", t0); blocked {
			t.Fatalf("blocked after %d failures", i)
		}
		f.Failed(a, "app", t0)
	}
	blocked, wait := f.Blocked(a, "app", t0)
	if !blocked || wait != time.Second {
		t.Fatalf("after 3 failures: blocked %v, wait %v; want true, 1s", blocked, wait)
	}
	if blocked, _ := f.Blocked(other, "app", t0); blocked {
		t.Fatal("another address is blocked")
	}
	if blocked, _ := f.Blocked(a, "reporting", t0); blocked {
		t.Fatal("another user from the same address is blocked")
	}
	if blocked, _ := f.Blocked(a, "app", t0.Add(time.Second)); blocked {
		t.Fatal("still blocked after one interval")
	}
	f.Failed(a, "app", t0.Add(time.Second))
	if blocked, _ := f.Blocked(a, "app", t0.Add(1500*time.Millisecond)); !blocked {
		t.Fatal("the refilled attempt failed, yet not blocked")
	}

	v6a, v6b := netip.MustParseAddr("2001:db8:1:2::1"), netip.MustParseAddr("2001:db8:1:2:ffff::9")
	for range 3 {
		f.Failed(v6a, "app", t0)
	}
	if blocked, _ := f.Blocked(v6b, "app", t0); !blocked {
		t.Fatal("another address of the same /64 is not blocked")
	}
	if blocked, _ := f.Blocked(netip.Addr{}, "app", t0); blocked {
		t.Fatal("a unix socket client is blocked")
	}

	// Full table: refilled budgets go first, a spent one stays.
	f.max = 3
	later := t0.Add(time.Minute) // every budget above has refilled
	for i := range 100 {
		f.Failed(netip.AddrFrom4([4]byte{198, 51, 100, byte(i)}), "app", later)
		if f.Len() > 3 {
			t.Fatalf("table has %d entries, want at most 3", f.Len())
		}
	}
	spent := netip.MustParseAddr("203.0.113.7")
	for range 3 {
		f.Failed(spent, "app", later)
	}
	for i := range 100 {
		f.Failed(netip.AddrFrom4([4]byte{198, 51, 101, byte(i)}), "app", later)
	}
	if blocked, _ := f.Blocked(spent, "app", later); !blocked {
		t.Fatal("a flood of other addresses pushed a spent budget out of the table")
	}

	off, err := NewFailures(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for range 100 {
		off.Failed(a, "app", t0)
	}
	if blocked, _ := off.Blocked(a, "app", t0); blocked {
		t.Fatal("a budget of 0 (off) blocked")
	}
	if _, err := NewFailures(-1, time.Second); err == nil {
		t.Fatal("negative burst accepted")
	}
	if _, err := NewFailures(5, 0); err == nil {
		t.Fatal("burst without interval accepted")
	}
}
