package paxos

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"testing"
	"time"
)

// TestGRPCCompactCatchUp: with node 3 stopped, nodes 1 and 2 compact
// their logs past everything node 3 has; at restart node 3 catches up
// through a peer's snapshot and the log after it, its state equal to the
// others', and Read below the new first index says ErrCompacted.
func TestGRPCCompactCatchUp(t *testing.T) {
	c := newTestCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for i := 0; i < 20; i++ {
		if _, err := propose(ctx, c.nodes[1], fmt.Sprintf("a%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	idx, err := c.nodes[1].Barrier(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.nodes[3].WaitApplied(ctx, idx); err != nil {
		t.Fatal(err)
	}
	c.stop(3)
	for i := 0; i < 50; i++ {
		if _, err := propose(ctx, c.nodes[1+uint32(i%2)], fmt.Sprintf("b%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	last, err := c.nodes[1].Barrier(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []uint32{1, 2} {
		n := c.nodes[id]
		if err := n.WaitApplied(ctx, last); err != nil {
			t.Fatal(err)
		}
		first, err := n.Compact(ctx, last+1)
		if err != nil {
			t.Fatalf("node %d: Compact: %v", id, err)
		}
		if first <= idx+1 {
			t.Fatalf("node %d: first index %d after Compact(%d), want past node 3's %d", id, first, last+1, idx)
		}
		if _, err := n.Read(1, 1<<20); !errors.Is(err, ErrCompacted) {
			t.Fatalf("node %d: Read(1) after compaction: %v, want ErrCompacted", id, err)
		}
		base, snap, err := n.Base()
		if err != nil || base != first-1 || snap == nil {
			t.Fatalf("node %d: Base() = %d, %d bytes, %v; first %d", id, base, len(snap), err, first)
		}
		if n.Status().FirstIndex != first {
			t.Fatalf("node %d: Status().FirstIndex %d, want %d", id, n.Status().FirstIndex, first)
		}
	}
	c.start(3, nil)
	if _, err := propose(ctx, c.nodes[3], "c-after-restart"); err != nil {
		t.Fatal(err)
	}
	final, err := c.nodes[3].Barrier(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for id, n := range c.nodes {
		if err := n.WaitApplied(ctx, final); err != nil {
			t.Fatalf("node %d: %v", id, err)
		}
	}
	ref := c.sms[1].copyList()
	got := c.sms[3].copyList()
	if len(got) != len(ref) {
		t.Fatalf("node 3 applied %d commands, node 1 %d", len(got), len(ref))
	}
	for i := range ref {
		if !bytes.Equal(got[i], ref[i]) {
			t.Fatalf("node 3 diverges at %d: %q vs %q", i, got[i], ref[i])
		}
	}
	if first := c.nodes[3].Status().FirstIndex; first <= idx+1 {
		t.Fatalf("node 3's log starts at %d: it did not install a snapshot", first)
	}
	// Restart node 3 once more: it comes back from the installed snapshot.
	c.stop(3)
	c.start(3, nil)
	if err := c.nodes[3].WaitApplied(ctx, final); err != nil {
		t.Fatal(err)
	}
	if l := c.sms[3].copyList(); len(l) < len(ref) {
		t.Fatalf("after restart node 3 holds %d commands, want >= %d", len(l), len(ref))
	}
}

// TestCompactBaseRefused: a checkpoint Config.CompactBase refuses never
// becomes the log's base; Compact rounds down to an accepted one, or
// leaves the log whole.
func TestCompactBaseRefused(t *testing.T) {
	c := newTestCluster(t, 1)
	c.stop(1)
	cfg := testConfig(1, c.peers, c.dirs[1])
	cfg.SnapshotEvery = 4
	var asked int
	cfg.CompactBase = func(snap []byte) bool {
		asked++ // the applier goroutine; read after Compact returned
		// listSM's snapshot: uvarint lengths before each command ("a0", ...).
		if _, k := binary.Uvarint(snap); k <= 0 || !bytes.HasPrefix(snap[k:], []byte("a0")) {
			t.Errorf("CompactBase got %q, not the state machine's snapshot", snap)
		}
		return false
	}
	c.startWith(1, nil, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := 0; i < 20; i++ {
		if _, err := propose(ctx, c.nodes[1], fmt.Sprintf("a%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	last, err := c.nodes[1].Barrier(ctx)
	if err != nil {
		t.Fatal(err)
	}
	before, _, _ := c.nodes[1].Base()
	first, err := c.nodes[1].Compact(ctx, last+1)
	if err != nil {
		t.Fatal(err)
	}
	if after, _, _ := c.nodes[1].Base(); first != before+1 || after != before || asked == 0 {
		t.Fatalf("Compact(%d) with every base refused: first %d, base %d -> %d, CompactBase asked %d times", last+1, first, before, after, asked)
	}
}
