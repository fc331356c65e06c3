package addrrate

import (
	"fmt"
	"net/netip"
	"sync"
	"time"
)

// Failures is a budget of failed logins per source address and user
// name: an address may fail Burst times at once for one user and once
// more every Every after that; while that budget is spent, its logins as
// that user are refused before the password is checked. Keyed by the
// user too, an attacker guessing one account's password from an address
// shared with clients of other accounts (a NAT, a load balancer, one
// host) locks only that account out there (red-team test, session 38:
// keyed by address alone, 27 wrong passwords locked every client of the
// address out). A password guesser then gets one guess per Every per
// address (one a second from one host is 86,400 a day; a 12-character
// password, the minimum `binlogd check` accepts quietly, holds out),
// while a client with a wrong password in its config fails Burst times
// and then is told why.
//
// A successful login gives nothing back: with one account of its own an
// attacker could otherwise refill its budget at will.
//
// Memory is bounded as the Limiter's is: at most MaxAddrs addresses are
// tracked; when the table is full, addresses whose budget has refilled
// are dropped, and if none has, the one with the most left. IPv6 counts
// by /64. Safe for concurrent use; callers pass the time.
type Failures struct {
	burst int
	every time.Duration
	max   int

	mu    sync.Mutex
	addrs map[failKey]bucket
}

// failKey is whose budget a failure spends.
type failKey struct {
	addr netip.Addr
	user string // at most maxKeyUser bytes
}

// maxKeyUser bounds the user name kept per key: MariaDB's are at most
// 128 characters, a stranger's may be anything.
const maxKeyUser = 128

func keyOf(a netip.Addr, user string) failKey {
	if len(user) > maxKeyUser {
		user = user[:maxKeyUser]
	}
	return failKey{addr: key(a), user: user}
}

// DefaultFailureBurst and DefaultFailureEvery are the login failure
// budget sqlproxy and binlogd's replication endpoint use by default.
const (
	DefaultFailureBurst = 20
	DefaultFailureEvery = time.Second
	defaultFailureAddrs = 65536
)

// NewFailures returns a budget of burst failures refilled one per every;
// burst 0 turns the budget off (Blocked is always false). It refuses a
// negative burst or a burst without a positive every.
func NewFailures(burst int, every time.Duration) (*Failures, error) {
	switch {
	case burst < 0:
		return nil, fmt.Errorf("login failure burst %d must be >= 0 (0: no limit)", burst)
	case burst > 0 && every <= 0:
		return nil, fmt.Errorf("login failure interval %v must be > 0", every)
	}
	return &Failures{burst: burst, every: every, max: defaultFailureAddrs, addrs: map[failKey]bucket{}}, nil
}

func (f *Failures) rate() float64 { return 1 / f.every.Seconds() }

// Blocked reports whether a login from a as user, at now, is refused,
// and how long until it would not be. An invalid a (a Unix socket) is
// never blocked, nor is anybody when f is nil or off.
func (f *Failures) Blocked(a netip.Addr, user string, now time.Time) (bool, time.Duration) {
	if f == nil || f.burst == 0 || !a.IsValid() {
		return false, 0
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	b, ok := f.addrs[keyOf(a, user)]
	if !ok {
		return false, 0
	}
	lv := b.level(now, f.rate(), f.burst)
	if lv >= 1 {
		return false, 0
	}
	return true, time.Duration((1 - lv) * float64(f.every))
}

// Failed spends one of a's failures as user.
func (f *Failures) Failed(a netip.Addr, user string, now time.Time) {
	if f == nil || f.burst == 0 || !a.IsValid() {
		return
	}
	k := keyOf(a, user)
	f.mu.Lock()
	defer f.mu.Unlock()
	b, ok := f.addrs[k]
	if !ok && len(f.addrs) >= f.max {
		f.makeRoom(now)
	}
	b.take(now, f.rate(), f.burst)
	f.addrs[k] = b
}

// Len is how many addresses are tracked.
func (f *Failures) Len() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.addrs)
}

// makeRoom drops, of a sample of the table, the refilled budgets, or
// else the fullest one. A sample, not the whole table: a flood of new
// addresses pays for each of its failures, and a scan of 65,536 entries
// under the lock took 2.26 ms (red-team test, session 38). Go's map
// order is random, so the sample is. f.mu is held.
func (f *Failures) makeRoom(now time.Time) {
	var fullest failKey
	most, seen := -1.0, 0
	for k, b := range f.addrs {
		if seen++; seen > makeRoomSample {
			break
		}
		lv := b.level(now, f.rate(), f.burst)
		if lv >= float64(f.burst) {
			delete(f.addrs, k)
			continue
		}
		if lv > most {
			fullest, most = k, lv
		}
	}
	if len(f.addrs) >= f.max && most >= 0 {
		delete(f.addrs, fullest)
	}
}

// makeRoomSample is how many entries makeRoom looks at.
const makeRoomSample = 64
