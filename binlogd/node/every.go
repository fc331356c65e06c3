package node

import (
	"context"
	"time"
)

// every calls f every d until ctx ends; the first call is d after the
// start. f runs on the caller's goroutine, so a slow f delays the next.
func every(ctx context.Context, d time.Duration, f func()) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			f()
		}
	}
}
