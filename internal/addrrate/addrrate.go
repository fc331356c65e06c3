package addrrate

import (
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// Config sets a Limiter's budgets. Every field must be positive
// (Validate).
type Config struct {
	// Rate and Burst are each address's budget: Rate new connections a
	// second, at most Burst at once.
	Rate  float64
	Burst int
	// PressureRate and PressureBurst are the node-wide bucket: while it
	// holds a token, nobody is refused.
	PressureRate  float64
	PressureBurst int
	// MaxAddrs bounds the addresses with a bucket of their own.
	MaxAddrs int
}

// Validate names the first field that is not positive.
func (c Config) Validate() error {
	for _, f := range []struct {
		name string
		v    float64
	}{{"Rate", c.Rate}, {"Burst", float64(c.Burst)}, {"PressureRate", c.PressureRate},
		{"PressureBurst", float64(c.PressureBurst)}, {"MaxAddrs", float64(c.MaxAddrs)}} {
		if !(f.v > 0) {
			return fmt.Errorf("addrrate: %s is %v, want > 0", f.name, f.v)
		}
	}
	return nil
}

// sweepEvery spaces the sweeps of a full table for refilled buckets: a
// flood from more than MaxAddrs addresses would otherwise scan the table
// at every accept.
const sweepEvery = time.Second

// Limiter decides, for each new connection, whether its source address
// may have it (package doc). Safe for concurrent use.
type Limiter struct {
	cfg    Config
	exempt atomic.Pointer[map[netip.Addr]struct{}]

	mu  sync.Mutex
	all bucket // node-wide, taken from by every non-exempt Allow
	// pressed: the node is under pressure, from the moment all is found
	// empty until it has refilled to half (a token refilled during a
	// flood would otherwise let one of the flood's connections through:
	// 100 a second more than the address's budget, measured).
	pressed   bool
	addrs     map[netip.Addr]bucket // Invariant: len(addrs) <= cfg.MaxAddrs
	lastSweep time.Time
}

// New returns a Limiter with cfg's budgets, nobody exempt. It panics on
// a cfg that Validate refuses: budgets are the caller's constants.
func New(cfg Config) *Limiter {
	if err := cfg.Validate(); err != nil {
		panic(err)
	}
	return &Limiter{cfg: cfg, addrs: map[netip.Addr]bucket{}}
}

// Config is the budgets l was made with.
func (l *Limiter) Config() Config { return l.cfg }

// SetExempt replaces the exempt addresses.
func (l *Limiter) SetExempt(addrs []netip.Addr) {
	m := make(map[netip.Addr]struct{}, len(addrs))
	for _, a := range addrs {
		m[a.Unmap()] = struct{}{}
	}
	l.exempt.Store(&m)
}

// Exempt reports whether a is exempt.
func (l *Limiter) Exempt(a netip.Addr) bool {
	m := l.exempt.Load()
	if m == nil {
		return false
	}
	_, ok := (*m)[a.Unmap()]
	return ok
}

// Allow reports whether a new connection from a, at now, may go on; the
// caller closes one it may not. An invalid a (no IP: a Unix socket) is
// allowed.
func (l *Limiter) Allow(a netip.Addr, now time.Time) bool {
	if !a.IsValid() || l.Exempt(a) {
		return true
	}
	k := key(a)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.pressed && l.all.level(now, l.cfg.PressureRate, l.cfg.PressureBurst) >= float64(l.cfg.PressureBurst)/2 {
		l.pressed = false
	}
	if !l.all.take(now, l.cfg.PressureRate, l.cfg.PressureBurst) {
		l.pressed = true
	}
	calm := !l.pressed
	b, ok := l.addrs[k]
	if !ok {
		if len(l.addrs) >= l.cfg.MaxAddrs {
			l.sweep(now)
		}
		if len(l.addrs) >= l.cfg.MaxAddrs {
			return calm // no budget of its own (package doc)
		}
		b = bucket{} // full
	}
	own := b.take(now, l.cfg.Rate, l.cfg.Burst)
	l.addrs[k] = b
	return own || calm
}

// Len is how many addresses have a bucket.
func (l *Limiter) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.addrs)
}

// sweep drops the buckets that have refilled, at most once per
// sweepEvery. l.mu is held.
func (l *Limiter) sweep(now time.Time) {
	if !l.lastSweep.IsZero() && now.Sub(l.lastSweep) < sweepEvery && now.Sub(l.lastSweep) >= 0 {
		return
	}
	l.lastSweep = now
	for k, b := range l.addrs {
		if b.level(now, l.cfg.Rate, l.cfg.Burst) >= float64(l.cfg.Burst) {
			delete(l.addrs, k)
		}
	}
}

// key is what a's budget is kept under: IPv4 (mapped or not) as
// itself, IPv6 by its /64.
func key(a netip.Addr) netip.Addr {
	a = a.Unmap()
	if a.Is4() {
		return a
	}
	p, err := a.WithZone("").Prefix(64)
	if err != nil {
		return a
	}
	return p.Addr()
}

// bucket is a token bucket; the zero bucket is full.
type bucket struct {
	tokens float64   // as of at (level refills them)
	at     time.Time // the latest time take saw
	used   bool      // false: never taken from, full
}

// level is b's tokens at now, refilled at rate up to burst. A clock
// that went back refills nothing.
func (b bucket) level(now time.Time, rate float64, burst int) float64 {
	if !b.used {
		return float64(burst)
	}
	t := b.tokens
	if d := now.Sub(b.at); d > 0 {
		t += d.Seconds() * rate
	}
	return min(t, float64(burst))
}

// take refills b to now and takes a token if it holds one.
func (b *bucket) take(now time.Time, rate float64, burst int) bool {
	t := b.level(now, rate, burst)
	if now.After(b.at) || !b.used {
		b.at = now
	}
	b.used = true
	if t < 1 {
		b.tokens = t
		return false
	}
	b.tokens = t - 1
	return true
}
