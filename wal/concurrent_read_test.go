package wal

import (
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
)

// TestReadsSeeEveryAnsweredSave: readers running beside a writer of
// synced and lazy saves, segment rotations and truncations find every
// instance answered before their read began, with its value, and no
// gaps. (Reading Badger before the held records once lost a lazy group
// applied in between.)
func TestReadsSeeEveryAnsweredSave(t *testing.T) {
	opts := quietOptions()
	opts.SegmentBytes = 4 << 10
	l := openTest(t, t.TempDir(), opts)
	const n = 1200
	var answered atomic.Uint64
	stop := make(chan struct{})
	// Each reader reads once per answered save at most: readers that
	// looped on full Ranges starved the writer (55 s under -race).
	var moved [3]chan struct{}
	var wg sync.WaitGroup
	for r := range moved {
		moved[r] = make(chan struct{}, 1)
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(r), 1))
			for {
				select {
				case <-stop:
					return
				case <-moved[r]:
				}
				upTo := answered.Load()
				first := l.HardState().FirstIndex
				if upTo < first {
					continue
				}
				if rng.IntN(2) == 0 {
					i := first + rng.Uint64N(upTo-first+1)
					a, ok, err := l.Get(i)
					if errors.Is(err, ErrCompacted) {
						continue
					}
					if err != nil || !ok || !equalAccepted(a, acc(i, 1)) {
						t.Errorf("Get(%d) = %+v, %v, %v (answered up to %d)", i, a, ok, err, upTo)
						return
					}
					continue
				}
				rs, err := l.Range(first, upTo, 0)
				if errors.Is(err, ErrCompacted) {
					continue
				}
				if err != nil || uint64(len(rs)) != upTo-first+1 {
					t.Errorf("Range(%d, %d) = %d records, %v", first, upTo, len(rs), err)
					return
				}
				for k, a := range rs {
					if i := first + uint64(k); !equalAccepted(a, acc(i, 1)) {
						t.Errorf("Range(%d, %d)[%d] = %+v, want instance %d", first, upTo, k, a, i)
						return
					}
				}
			}
		})
	}
	rng := rand.New(rand.NewPCG(7, 7))
	for i := uint64(1); i <= n && !t.Failed(); i++ {
		if err := l.Save(Update{Accepted: []Accepted{acc(i, 1)}, NoSync: rng.IntN(3) > 0}); err != nil {
			t.Error(err)
			break
		}
		answered.Store(i)
		for _, c := range moved {
			select {
			case c <- struct{}{}:
			default:
			}
		}
		if i%300 == 0 {
			if err := l.SaveApplied(i, nil); err != nil {
				t.Error(err)
				break
			}
			if err := l.TruncateBelow(i - 150); err != nil {
				t.Error(err)
				break
			}
		}
	}
	close(stop)
	wg.Wait()
}
