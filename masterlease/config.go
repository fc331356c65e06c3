package masterlease

import (
	"fmt"
	"time"
)

// Config sets the lease timing. Every node of a cluster must use the same
// LeaseDuration and DriftMargin.
type Config struct {
	// LeaseDuration d: how long a grant or renewal lasts. Followers count
	// it from the moment they apply the grant; the holder from the moment
	// it proposed, minus DriftMargin.
	LeaseDuration time.Duration
	// DriftMargin m: how much shorter the holder's own view is, to absorb
	// clock-rate differences. Safe while every clock's rate stays within
	// MaxClockDrift() of true time.
	DriftMargin time.Duration
	// RenewInterval: the holder renews this long after the start of the
	// proposal that gave its current deadline (default d/3).
	RenewInterval time.Duration
	// RetryInterval: Run's tick; the least time between two proposals of
	// this node's election loop (default d/20).
	RetryInterval time.Duration
}

// DefaultConfig is a 5 s lease with a 500 ms drift margin, renewed every
// 5/3 s (tolerates clock rates within ±5.2%).
func DefaultConfig() Config {
	return Config{
		LeaseDuration: 5 * time.Second,
		DriftMargin:   500 * time.Millisecond,
		RenewInterval: 5 * time.Second / 3,
		RetryInterval: 250 * time.Millisecond,
	}
}

// Validate checks the fields against each other; the error names the key.
func (c Config) Validate() error {
	d, m := c.LeaseDuration, c.DriftMargin
	switch {
	case d <= 0:
		return fmt.Errorf("%w: LeaseDuration must be positive, got %v", ErrConfig, d)
	case m <= 0:
		return fmt.Errorf("%w: DriftMargin must be positive (clocks drift), got %v", ErrConfig, m)
	case 2*m >= d:
		return fmt.Errorf("%w: DriftMargin %v must be less than LeaseDuration/2 (%v), or the lease is useless",
			ErrConfig, m, d/2)
	case c.RenewInterval <= 0:
		return fmt.Errorf("%w: RenewInterval must be positive, got %v", ErrConfig, c.RenewInterval)
	case c.RenewInterval >= d-m:
		return fmt.Errorf("%w: RenewInterval %v must be less than LeaseDuration-DriftMargin (%v), or the master's lease lapses before it renews",
			ErrConfig, c.RenewInterval, d-m)
	case c.RetryInterval <= 0:
		return fmt.Errorf("%w: RetryInterval must be positive, got %v", ErrConfig, c.RetryInterval)
	case c.RetryInterval >= c.RenewInterval:
		return fmt.Errorf("%w: RetryInterval %v must be less than RenewInterval %v", ErrConfig, c.RetryInterval, c.RenewInterval)
	}
	return nil
}

// MaxClockDrift is the largest relative clock-rate error ε (|rate-1| ≤ ε on
// every node) under which two nodes never both believe they hold the
// lease: the holder's (d-m)/(1-ε) must not exceed a follower's d/(1+ε),
// i.e. ε ≤ m/(2d-m).
func (c Config) MaxClockDrift() float64 {
	return float64(c.DriftMargin) / float64(2*c.LeaseDuration-c.DriftMargin)
}
