package masterlease

import "time"

// Clock is a node's monotonic clock. Only differences between its readings
// matter; it must not jump (time.Now's monotonic reading qualifies).
type Clock interface {
	Now() time.Time
}

// SystemClock is the process's monotonic clock.
type SystemClock struct{}

// Now returns time.Now(), which carries a monotonic reading.
func (SystemClock) Now() time.Time { return time.Now() }
