package paxos

import (
	"math/rand"

	"phxgo/wal"
)

// lossyStorage is MemoryStorage with the wal's crash semantics for saves
// without a sync of their own (NoSync, or only a chosen index): they are
// visible at once, durable only once a later synced write is, and a crash
// loses a random suffix of those not yet covered (Badger's replay stops
// at the first torn transaction).
type lossyStorage struct {
	*MemoryStorage
	unsynced []undoSave // oldest first
}

type undoSave struct {
	chosen, last uint64
	prev         []undoRecord
}

type undoRecord struct {
	index uint64
	had   bool
	a     wal.Accepted
}

func newLossyStorage() *lossyStorage { return &lossyStorage{MemoryStorage: NewMemoryStorage()} }

func (s *lossyStorage) Save(u wal.Update) error {
	if !(u.NoSync || (u.Promised == nil && len(u.Accepted) == 0)) {
		s.unsynced = nil // this sync covers every earlier write
		return s.MemoryStorage.Save(u)
	}
	s.mu.Lock()
	un := undoSave{chosen: s.hs.Chosen, last: s.last}
	for _, a := range u.Accepted {
		old, had := s.log[a.Index]
		un.prev = append(un.prev, undoRecord{index: a.Index, had: had, a: old})
	}
	s.mu.Unlock()
	s.unsynced = append(s.unsynced, un)
	return s.MemoryStorage.Save(u)
}

func (s *lossyStorage) SaveApplied(applied uint64, snapshot []byte) error {
	s.unsynced = nil
	return s.MemoryStorage.SaveApplied(applied, snapshot)
}

func (s *lossyStorage) TruncateBelow(index uint64) error {
	s.unsynced = nil
	return s.MemoryStorage.TruncateBelow(index)
}

func (s *lossyStorage) TruncateWithBase(index uint64, base []byte) error {
	s.unsynced = nil
	return s.MemoryStorage.TruncateWithBase(index, base)
}

func (s *lossyStorage) InstallSnapshot(index uint64, snap []byte) error {
	s.unsynced = nil
	return s.MemoryStorage.InstallSnapshot(index, snap)
}

// crash loses the newest k unsynced saves, k random; it reports k.
func (s *lossyStorage) crash(rng *rand.Rand) int {
	k := rng.Intn(len(s.unsynced) + 1)
	s.mu.Lock()
	defer s.mu.Unlock()
	for j := len(s.unsynced) - 1; j >= len(s.unsynced)-k; j-- {
		un := s.unsynced[j]
		for r := len(un.prev) - 1; r >= 0; r-- {
			p := un.prev[r]
			if p.had {
				s.log[p.index] = p.a
			} else {
				delete(s.log, p.index)
			}
		}
		s.hs.Chosen, s.last = un.chosen, un.last
	}
	s.unsynced = nil
	return k
}
