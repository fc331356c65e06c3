package paxos

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"phxgo/wal"
)

// TestSyncFailureStopsNode: a real 3-node gRPC cluster in which one node's
// wal fsync starts failing (EIO, injected at the wal's BeforeSync knob).
// That node stops itself at once and says why (Done, Err wrapping
// ErrStorage and the cause); its Propose fails with that error; the other
// two keep choosing values without it.
func TestSyncFailureStopsNode(t *testing.T) {
	c := newTestCluster(t, 3)
	await(t, 10*time.Second, "a leader", func() bool { return c.leader() != 0 })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := propose(ctx, c.nodes[c.leader()], "a"); err != nil {
		t.Fatal(err)
	}
	var victim uint32
	for id := range c.nodes {
		if id != c.leader() {
			victim = id
		}
	}
	// Restart the victim on a wal whose syncs fail once armed.
	var armed atomic.Bool
	c.stop(victim)
	c.walOptions = &wal.Options{Knobs: &wal.TestingKnobs{BeforeSync: func(int) error {
		if armed.Load() {
			return syscall.EIO
		}
		return nil
	}}}
	c.startWith(victim, nil, testConfig(victim, c.peers, c.dirs[victim]))
	c.walOptions = nil
	n := c.nodes[victim]
	select {
	case <-n.Done():
		t.Fatalf("node stopped before any fault: %v", n.Err())
	default:
	}
	if n.Err() != nil {
		t.Fatalf("Err = %v on a healthy node", n.Err())
	}
	armed.Store(true)
	for i := 0; ; i++ {
		if _, err := propose(ctx, c.nodes[c.leader()], "b"); err != nil {
			t.Fatal(err)
		}
		select {
		case <-n.Done():
		case <-time.After(200 * time.Millisecond):
			if i > 50 {
				t.Fatal("the node with a failing fsync never stopped")
			}
			continue
		}
		break
	}
	err := n.Err()
	if !errors.Is(err, ErrStorage) || !errors.Is(err, syscall.EIO) {
		t.Fatalf("Err = %v, want ErrStorage wrapping EIO", err)
	}
	if _, _, perr := n.Propose(ctx, []byte("x")); !errors.Is(perr, ErrStorage) {
		t.Fatalf("Propose on the failed node = %v, want ErrStorage", perr)
	}
	if !strings.Contains(err.Error(), "sync") {
		t.Fatalf("Err = %v, want it to say the sync failed", err)
	}
	// The two others still form a quorum.
	var other uint32
	for id := range c.nodes {
		if id != victim {
			other = id
		}
	}
	if _, err := propose(ctx, c.nodes[other], "c"); err != nil {
		t.Fatalf("the healthy majority: %v", err)
	}
}
