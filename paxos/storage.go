package paxos

import (
	"fmt"
	"sort"
	"sync"

	"phxgo/wal"
)

// Storage is the durable acceptor/learner state the engine needs; *wal.Log
// satisfies it. Save must be atomic and durable before it returns; reads
// (Range, Get) may run concurrently with Save.
type Storage interface {
	HardState() wal.HardState
	Save(wal.Update) error
	SaveApplied(applied uint64, snapshot []byte) error
	Get(index uint64) (wal.Accepted, bool, error)
	Range(from, to uint64, maxBytes int) ([]wal.Accepted, error)
	LastIndex() uint64
	TruncateBelow(index uint64) error
	// TruncateWithBase is TruncateBelow that also stores base, the
	// snapshot after index-1 (HardState().Base), in the same durable write.
	TruncateWithBase(index uint64, base []byte) error
	// InstallSnapshot stores a peer's snapshot after index in ONE durable
	// write: Applied and Chosen rise to index, the log starts at index+1
	// with Base = snap, and everything stored below is dropped.
	InstallSnapshot(index uint64, snap []byte) error
	Close() error
}

// MemoryStorage is a Storage in memory, for tests and simulation. It keeps
// what a crash would keep: a "restart" reuses the same MemoryStorage.
type MemoryStorage struct {
	mu   sync.Mutex
	hs   wal.HardState
	log  map[uint64]wal.Accepted
	last uint64
	meta []byte // membership history (membership_node.go)
	// Saves counts Save calls (the simulation's durability rounds).
	Saves int
}

// NewMemoryStorage returns an empty log (FirstIndex 1).
func NewMemoryStorage() *MemoryStorage {
	return &MemoryStorage{hs: wal.HardState{FirstIndex: 1}, log: make(map[uint64]wal.Accepted)}
}

// HardState implements Storage.
func (s *MemoryStorage) HardState() wal.HardState {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hs
}

// Save implements Storage.
func (s *MemoryStorage) Save(u wal.Update) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.Saves++
	if u.Promised != nil {
		s.hs.Promised = *u.Promised
	}
	for _, a := range u.Accepted {
		if a.Index < s.hs.FirstIndex {
			continue // below a truncation (wal drops these too)
		}
		a.Value = append([]byte(nil), a.Value...)
		s.log[a.Index] = a
		s.last = max(s.last, a.Index)
	}
	if u.Chosen > s.hs.Chosen {
		s.hs.Chosen = u.Chosen
	}
	return nil
}

// SaveApplied implements Storage.
func (s *MemoryStorage) SaveApplied(applied uint64, snapshot []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if applied < s.hs.Applied {
		return nil
	}
	s.hs.Applied = applied
	s.hs.Chosen = max(s.hs.Chosen, applied)
	s.hs.Snapshot = append([]byte(nil), snapshot...)
	return nil
}

// Get implements Storage.
func (s *MemoryStorage) Get(index uint64) (wal.Accepted, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.log[index]
	return a, ok, nil
}

// Range implements Storage: ascending, [from, to], at least one entry if
// any, stopping once maxBytes of values are reached.
func (s *MemoryStorage) Range(from, to uint64, maxBytes int) ([]wal.Accepted, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []wal.Accepted
	size := 0
	to = min(to, s.last)
	if to >= from && to-from >= uint64(len(s.log)) { // (no int conversion: to-from+1 may wrap)
		// Sparse: walk the keys.
		keys := make([]uint64, 0, len(s.log))
		for k := range s.log {
			if k >= from && k <= to {
				keys = append(keys, k)
			}
		}
		sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
		for _, k := range keys {
			if len(out) > 0 && size >= maxBytes {
				break
			}
			a := s.log[k]
			out = append(out, a)
			size += len(a.Value)
		}
		return out, nil
	}
	for i := from; i <= to; i++ {
		if len(out) > 0 && size >= maxBytes {
			break
		}
		if a, ok := s.log[i]; ok {
			out = append(out, a)
			size += len(a.Value)
		}
	}
	return out, nil
}

// LastIndex implements Storage.
func (s *MemoryStorage) LastIndex() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last
}

// TruncateBelow implements Storage.
func (s *MemoryStorage) TruncateBelow(index uint64) error { return s.TruncateWithBase(index, nil) }

// TruncateWithBase implements Storage, with the wal's rules.
func (s *MemoryStorage) TruncateWithBase(index uint64, base []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if index <= s.hs.FirstIndex {
		return nil
	}
	if index > s.hs.Applied+1 {
		return fmt.Errorf("%w: truncate below %d, above applied+1 (%d)", wal.ErrInvalid, index, s.hs.Applied+1)
	}
	for k := range s.log {
		if k < index {
			delete(s.log, k)
		}
	}
	s.hs.FirstIndex = index
	s.hs.Base = append([]byte(nil), base...)
	if len(base) == 0 {
		s.hs.Base = nil
	}
	return nil
}

// InstallSnapshot implements Storage.
func (s *MemoryStorage) InstallSnapshot(index uint64, snap []byte) error {
	s.mu.Lock()
	if index > s.hs.Applied {
		s.hs.Applied = index
		s.hs.Chosen = max(s.hs.Chosen, index)
		s.hs.Snapshot = append([]byte(nil), snap...)
	}
	s.mu.Unlock()
	return s.TruncateWithBase(index+1, snap)
}

// Close implements Storage.
func (s *MemoryStorage) Close() error { return nil }
