package paxos

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// A one-member cluster is its own majority: proposals are chosen by its
// own durable accept, and survive a restart.
func TestSingleMember(t *testing.T) {
	c := newTestCluster(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range 20 {
		if _, err := propose(ctx, c.nodes[1], fmt.Sprint("cmd", i)); err != nil {
			t.Fatalf("propose %d: %v", i, err)
		}
	}
	c.stop(1)
	c.start(1, nil)
	if _, err := c.nodes[1].Barrier(ctx); err != nil {
		t.Fatalf("barrier after restart: %v", err)
	}
	got := c.sms[1].copyList()
	if len(got) < 20 || string(got[0]) != "cmd0" || string(got[19]) != "cmd19" {
		t.Fatalf("applied after restart: %d commands %q", len(got), got)
	}
}
