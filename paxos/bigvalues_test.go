package paxos

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"phxgo/wal"
)

// Large commands under concurrent load, over real gRPC and wals with the
// smallest memtable (so one wal transaction holds about 600 KiB). A
// node merges every Ready waiting for its persister into one save, and
// that merge must not outgrow a transaction: the wal would refuse it and
// the node stop ("exceeds one Badger transaction"; paxosbench -value
// 65536 lost both followers within seconds that way).
func TestLargeCommandsUnderLoad(t *testing.T) {
	if raceEnabled && os.Getenv("PHXGO_LARGE_RACE") == "" {
		// make test runs it without -race, next to the simulation. Under
		// -race on a starved host (GOMAXPROCS=1 on a core shared with a
		// busy loop) nothing is chosen for minutes: no leader holds
		// within the 200 ms election timeout while moving a window of
		// 64 KiB values (waiters and proposals are all there). Three
		// amplifiers of that are fixed (ef0654f: 4 MB Promises, Prepare
		// and Fetch re-sends); what is left is leader churn, each new
		// leader re-proposing ~25 MB to each follower. With a 1 s
		// election timeout it passes there in 14-20 s. PHXGO_LARGE_RACE=1
		// runs it.
		t.Skip("runs without -race in make test (PHXGO_LARGE_RACE=1 to run it here)")
	}
	opts := wal.Options{MemTableSize: 4 << 20}
	c := newTestClusterWAL(t, 3, &opts)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute) // a deadline, not a speed target: -race under make test's load took over a minute
	defer cancel()
	var lead uint32
	await(t, 10*time.Second, "a leader", func() bool { lead = c.leader(); return lead != 0 })
	const clients, each, size = 16, 4, 64 << 10
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range each {
				cmd := bytes.Repeat([]byte{byte(i)}, size)
				copy(cmd, fmt.Sprintf("%d/%d", i, j))
				if _, err := propose(ctx, c.nodes[lead], string(cmd)); err != nil {
					errs <- fmt.Errorf("client %d command %d: %w", i, j, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	want := c.nodes[lead].Status().Chosen
	for id, n := range c.nodes {
		await(t, time.Minute, fmt.Sprintf("node %d to apply %d", id, want), func() bool {
			return n.Status().Applied >= want
		})
		n.mu.Lock()
		fatal := n.fatal
		n.mu.Unlock()
		if fatal != nil {
			t.Fatalf("node %d failed: %v", id, fatal)
		}
	}
	for id, sm := range c.sms {
		if got := len(sm.copyList()); got != clients*each {
			t.Errorf("node %d applied %d commands, want %d", id, got, clients*each)
		}
	}
}
