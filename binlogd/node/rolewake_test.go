package node

import (
	"testing"
	"time"

	"phxgo/binlogd/config"
)

// The role loop waits for notifications, but never past its own lease
// deadline: the lease publishes an expiry only at its next RetryInterval,
// and a master must step down at the deadline (TestNextLook*).
func TestNextLookStopsAtTheDeadline(t *testing.T) {
	now := time.Unix(1000, 0)
	recheck := 250 * time.Millisecond
	for _, c := range []struct {
		name     string
		deadline time.Time
		want     time.Duration
	}{
		{"no lease: the recheck", time.Time{}, recheck},
		{"deadline far: the recheck", now.Add(5 * time.Second), recheck},
		{"deadline near: the deadline itself", now.Add(40 * time.Millisecond), 40 * time.Millisecond},
		{"deadline now: at once", now, 0},
		{"deadline passed: at once", now.Add(-time.Millisecond), 0},
	} {
		if got := nextLook(c.deadline, now, recheck); got != c.want {
			t.Errorf("%s: nextLook = %v, want %v", c.name, got, c.want)
		}
	}
}

// A wake never blocks, and any number of them before the loop looks
// leave one pending look.
func TestWakeLoopsCoalesce(t *testing.T) {
	n := &Node{cfg: &config.Config{}}
	n.ctl = newRoleDriver(n)
	for range 3 {
		n.wakeLoops()
	}
	n.wakeRole()
	for _, c := range []chan struct{}{n.ctl.wake, n.ctl.pollWake} {
		select {
		case <-c:
		default:
			t.Fatal("no wake pending")
		}
		select {
		case <-c:
			t.Fatal("a second wake pending")
		default:
		}
	}
}
