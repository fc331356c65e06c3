package paxos

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// gatedStorage holds every SaveApplied until gate is closed, and fails it
// with failWith if that is set.
type gatedStorage struct {
	*MemoryStorage
	gate     chan struct{}
	entered  chan uint64
	failWith error
}

func (s *gatedStorage) SaveApplied(applied uint64, snap []byte) error {
	select {
	case s.entered <- applied:
	default:
	}
	<-s.gate
	if s.failWith != nil {
		return s.failWith
	}
	return s.MemoryStorage.SaveApplied(applied, snap)
}

func startGated(t *testing.T, failWith error) (*Node, *gatedStorage) {
	t.Helper()
	st := &gatedStorage{MemoryStorage: NewMemoryStorage(), gate: make(chan struct{}), entered: make(chan uint64, 1), failWith: failWith}
	cfg := testConfig(1, map[uint32]string{1: "127.0.0.1:1"}, "")
	cfg.SnapshotEvery = 5
	n, err := Start(cfg, &lockedSM{}, WithStorage(st))
	if err != nil {
		t.Fatal(err)
	}
	return n, st
}

// The periodic save of the applied state runs beside the applier: while
// it waits for its sync, commands are still applied and answered.
func TestSnapshotSaveDoesNotHoldBackApplying(t *testing.T) {
	n, st := startGated(t, nil)
	defer n.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := 0; len(st.entered) == 0; i++ {
		if _, err := propose(ctx, n, fmt.Sprint("a", i)); err != nil {
			t.Fatal(err)
		}
	}
	saving := <-st.entered
	// The save is stuck in storage; the node goes on committing.
	for i := range 20 {
		if _, err := propose(ctx, n, fmt.Sprint("b", i)); err != nil {
			t.Fatalf("propose while a snapshot save waits: %v", err)
		}
	}
	if got := st.HardState().Applied; got >= saving {
		t.Fatalf("durable applied %d before the save of %d returned", got, saving)
	}
	close(st.gate)
	// Compact waits for the background save, then cuts at a checkpoint.
	first, err := n.Compact(ctx, n.Applied()+1)
	if err != nil {
		t.Fatal(err)
	}
	if first <= saving {
		t.Fatalf("FirstIndex %d after Compact, want above the saved %d", first, saving)
	}
}

// A background save that fails stops the node with ErrStorage, as a
// synchronous one did.
func TestSnapshotSaveFailureStopsTheNode(t *testing.T) {
	boom := errors.New("disk on fire")
	n, st := startGated(t, boom)
	defer n.Stop()
	close(st.gate)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var err error
	for i := 0; err == nil; i++ {
		_, err = propose(ctx, n, fmt.Sprint("c", i))
	}
	if !errors.Is(err, ErrStorage) && !errors.Is(err, ErrStopped) {
		t.Fatalf("propose after a failed save: %v, want ErrStorage or ErrStopped", err)
	}
	if ctx.Err() != nil {
		t.Fatal("the node kept committing after its snapshot save failed")
	}
}

// reclaimingStorage counts ReclaimNow calls.
type reclaimingStorage struct {
	*MemoryStorage
	calls int
	err   error
}

func (s *reclaimingStorage) ReclaimNow() error { s.calls++; return s.err }

// ReclaimNow reaches a storage that reclaims space, wraps its error as
// ErrStorage, and is a no-op for one that does not.
func TestReclaimNowReachesTheStorage(t *testing.T) {
	st := &reclaimingStorage{MemoryStorage: NewMemoryStorage()}
	n, err := Start(testConfig(1, map[uint32]string{1: "127.0.0.1:1"}, ""), &lockedSM{}, WithStorage(st))
	if err != nil {
		t.Fatal(err)
	}
	defer n.Stop()
	if err := n.ReclaimNow(); err != nil || st.calls != 1 {
		t.Fatalf("ReclaimNow = %v after %d calls", err, st.calls)
	}
	st.err = errors.New("disk on fire")
	if err := n.ReclaimNow(); !errors.Is(err, ErrStorage) {
		t.Fatalf("ReclaimNow with a failing storage = %v, want ErrStorage", err)
	}
	m, err := Start(testConfig(1, map[uint32]string{1: "127.0.0.1:1"}, ""), &lockedSM{}, WithStorage(NewMemoryStorage()))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Stop()
	if err := m.ReclaimNow(); err != nil {
		t.Fatalf("ReclaimNow on a memory storage = %v", err)
	}
}
