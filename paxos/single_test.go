package paxos

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"phxgo/wal"
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

// The monitoring counters move with the load: the leader packs commands
// into values and the commit observer sees each successful Propose.
func TestStatusCountersAndCommitObserver(t *testing.T) {
	var mu sync.Mutex
	var seen []time.Duration
	sm := &lockedSM{}
	cfg := testConfig(1, map[uint32]string{1: "127.0.0.1:1"}, t.TempDir())
	n, err := Start(cfg, sm, WithCommitObserver(func(d time.Duration) {
		mu.Lock()
		seen = append(seen, d)
		mu.Unlock()
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer n.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 25 {
				if _, err := propose(ctx, n, fmt.Sprint("w", w, "-", i)); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	st := n.Status()
	if st.CommandsProposed < 200 || st.ValuesProposed == 0 || st.ValuesProposed > st.CommandsProposed || st.BytesProposed == 0 {
		t.Fatalf("counters: %+v", st)
	}
	if st.LeaderChanges != 1 {
		t.Fatalf("leader changes %d, want 1 (none to a leader)", st.LeaderChanges)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 200 {
		t.Fatalf("commit observer saw %d proposals, want 200", len(seen))
	}
	for _, d := range seen {
		if d <= 0 {
			t.Fatalf("latency %v", d)
		}
	}
}

// gappyStorage hides one instance from Range, as a storage bug would.
type gappyStorage struct {
	*MemoryStorage
	hide atomic.Uint64
}

func (s *gappyStorage) Range(from, to uint64, maxBytes int) ([]wal.Accepted, error) {
	as, err := s.MemoryStorage.Range(from, to, maxBytes)
	out := as[:0:0]
	for _, a := range as {
		if a.Index != s.hide.Load() {
			out = append(out, a)
		}
	}
	return out, err
}

// ReadNext never steps over an applied instance the storage lost: it
// stops there with ErrStorage, so a binlog reader cannot skip a batch.
// (The in-memory tail is off: it holds only consecutive entries, so the
// storage path is the one that can meet a gap.)
func TestReadNextRefusesAGap(t *testing.T) {
	st := &gappyStorage{MemoryStorage: NewMemoryStorage()}
	cfg := testConfig(1, map[uint32]string{1: "127.0.0.1:1"}, "")
	cfg.ReadTailBytes = 0
	n, err := Start(cfg, &listSM{}, WithStorage(st))
	if err != nil {
		t.Fatal(err)
	}
	defer n.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var idx []uint64
	for i := range 5 {
		at, err := propose(ctx, n, fmt.Sprint("cmd", i))
		if err != nil {
			t.Fatal(err)
		}
		idx = append(idx, at)
	}
	cmds, next, err := n.ReadNext(1, 1<<20)
	if err != nil || len(cmds) != 5 {
		t.Fatalf("ReadNext = %d commands, %v", len(cmds), err)
	}
	st.hide.Store(idx[2])
	cmds, next, err = n.ReadNext(1, 1<<20)
	if !errors.Is(err, ErrStorage) || next != idx[2] || len(cmds) != 2 {
		t.Fatalf("ReadNext over a lost instance %d = %d commands, next %d, %v; want 2, %d, ErrStorage", idx[2], len(cmds), next, err, idx[2])
	}
}

// The stage observer splits a leader's commits: every stage is seen, and
// each value's accept round and apply once.
func TestStageObserver(t *testing.T) {
	var mu sync.Mutex
	seen := map[Stage]int{}
	cfg := testConfig(1, map[uint32]string{1: "127.0.0.1:1"}, t.TempDir())
	n, err := Start(cfg, &lockedSM{}, WithStageObserver(func(s Stage, d time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		if d < 0 {
			t.Errorf("stage %v: %v", s, d)
		}
		seen[s]++
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer n.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range 20 {
		if _, err := propose(ctx, n, fmt.Sprint("cmd", i)); err != nil {
			t.Fatal(err)
		}
	}
	values := int(n.Status().ValuesProposed)
	mu.Lock()
	defer mu.Unlock()
	if seen[StageQueue] != 20 || seen[StageAcceptRound] == 0 || seen[StageAcceptRound] > values || seen[StageChosenToApplied] != seen[StageAcceptRound] {
		t.Fatalf("stages seen %v, values %d", seen, values)
	}
}
