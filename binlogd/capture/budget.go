package capture

import (
	"context"
	"sync"
)

// budget bounds the event bytes one session holds between the reader and
// durability: the reader takes a unit's size before handing it on, and
// the pipeline gives it back when the unit's batch is durable (or the
// unit is dropped as a duplicate). A unit bigger than the whole budget
// is let through when nothing else is held, so nothing waits forever.
//
// Invariant: used <= max, or used is one unit bigger than max.
type budget struct {
	mu      sync.Mutex
	used    int
	max     int
	freed   chan struct{} // closed and replaced by every give
	maxUsed int           // the most held at once, for Stats
	// onPeak, if set, hears every new maxUsed (under mu), so Stats shows
	// the peak while the session runs rather than after it ends.
	onPeak func(int)
}

func newBudget(max int) *budget { return &budget{max: max, freed: make(chan struct{})} }

// take blocks until n bytes fit (or nothing is held) or ctx ends.
func (b *budget) take(ctx context.Context, n int) error {
	for {
		b.mu.Lock()
		if b.used == 0 || b.used+n <= b.max {
			b.used += n
			if b.used > b.maxUsed {
				b.maxUsed = b.used
				if b.onPeak != nil {
					b.onPeak(b.used)
				}
			}
			b.mu.Unlock()
			return nil
		}
		ch := b.freed
		b.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// give returns n bytes; a nil budget (tests without a reader) ignores it.
func (b *budget) give(n int) {
	if b == nil || n == 0 {
		return
	}
	b.mu.Lock()
	b.used -= n
	close(b.freed)
	b.freed = make(chan struct{})
	b.mu.Unlock()
}
