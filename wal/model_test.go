package wal

import (
	"errors"
	"math/rand/v2"
	"testing"
)

// TestAgainstAModel runs random saves (synced and lazy, several per group
// through SaveAsync), applied states, truncations, reads and reopens over
// small segments, and checks every read and the HardState against a map
// of what was saved: the overlay of lazy groups, segment rotation and
// collection, and replay all meet here.
func TestAgainstAModel(t *testing.T) {
	for seed := range uint64(4) {
		t.Run("", func(t *testing.T) { runModel(t, seed) })
	}
}

func runModel(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 7))
	dir := t.TempDir()
	opts := quietOptions()
	opts.SegmentBytes = 4 << 10
	opts.LazySyncBytes = 1 << 10
	l := openTest(t, dir, opts)
	model := map[uint64]Accepted{}
	var hi, chosen, applied uint64
	first := uint64(1)
	check := func(step int) {
		t.Helper()
		hs := l.HardState()
		if hs.FirstIndex != first || hs.Chosen != chosen || hs.Applied != applied {
			t.Fatalf("seed %d step %d: HardState %+v, want first %d chosen %d applied %d", seed, step, hs, first, chosen, applied)
		}
		from := first + uint64(rng.IntN(20))
		to := from + uint64(rng.IntN(60))
		got, err := l.Range(from, to, 0)
		if err != nil {
			t.Fatalf("seed %d step %d: Range(%d, %d): %v", seed, step, from, to, err)
		}
		var want []Accepted
		for i := from; i <= to; i++ {
			if a, ok := model[i]; ok {
				want = append(want, a)
			}
		}
		if len(got) != len(want) {
			t.Fatalf("seed %d step %d: Range(%d, %d) = %d records, want %d", seed, step, from, to, len(got), len(want))
		}
		for i := range want {
			if !equalAccepted(got[i], want[i]) {
				t.Fatalf("seed %d step %d: Range[%d] = %+v, want %+v", seed, step, i, got[i], want[i])
			}
		}
		i := first + uint64(rng.IntN(int(hi-first+2)))
		a, ok, err := l.Get(i)
		w, wok := model[i]
		if err != nil || ok != wok || ok && !equalAccepted(a, w) {
			t.Fatalf("seed %d step %d: Get(%d) = %+v, %v, %v; want %+v, %v", seed, step, i, a, ok, err, w, wok)
		}
	}
	for step := range 400 {
		switch r := rng.IntN(100); {
		case r < 60: // a burst of saves, some lazy, some re-accepting
			var chs []<-chan error
			for range 1 + rng.IntN(6) {
				var as []Accepted
				for range 1 + rng.IntN(3) {
					i := hi + 1
					if hi >= first && rng.IntN(4) == 0 {
						i = first + uint64(rng.IntN(int(hi-first+1)))
					}
					a := Accepted{Index: i, Ballot: Ballot{Round: uint64(step + 1), Node: 1}, Value: append(val(uint64(step)), make([]byte, rng.IntN(300))...)}
					as = append(as, a)
					model[i] = a
					hi = max(hi, i)
				}
				c := chosen + uint64(rng.IntN(3))
				c = min(c, hi)
				chosen = max(chosen, c)
				chs = append(chs, l.SaveAsync(Update{Accepted: as, Chosen: c, NoSync: rng.IntN(3) == 0}))
			}
			for _, ch := range chs {
				if err := <-ch; err != nil {
					t.Fatalf("seed %d step %d: save: %v", seed, step, err)
				}
			}
		case r < 70:
			if chosen > applied {
				applied += uint64(rng.IntN(int(chosen-applied) + 1))
				if err := l.SaveApplied(applied, val(applied)); err != nil {
					t.Fatal(err)
				}
			}
		case r < 80:
			if applied+1 > first {
				below := first + uint64(rng.IntN(int(applied+1-first)+1))
				if err := l.TruncateBelow(below); err != nil {
					t.Fatal(err)
				}
				for i := first; i < below; i++ {
					delete(model, i)
				}
				first = max(first, below)
				if _, _, err := l.Get(first - 1); first > 1 && !errors.Is(err, ErrCompacted) {
					t.Fatalf("seed %d step %d: Get(%d) below first: %v", seed, step, first-1, err)
				}
			}
		case r < 85:
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			l = openTest(t, dir, opts)
		}
		check(step)
	}
	t.Logf("seed %d: %d instances, first %d, %d segments started", seed, len(model), first, l.Stats().Segments)
}
