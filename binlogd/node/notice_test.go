package node

import "testing"

// A notice wakes every waiter that took its channel before the notify,
// and none that took it after.
func TestNoticeBroadcasts(t *testing.T) {
	var c notice
	a, b := c.wait(), c.wait()
	c.notify()
	for _, ch := range []<-chan struct{}{a, b} {
		select {
		case <-ch:
		default:
			t.Fatal("a waiter was not woken")
		}
	}
	select {
	case <-c.wait():
		t.Fatal("a channel taken after the notify is closed")
	default:
	}
	c.notify() // nobody waits: nothing to close, no panic
}
