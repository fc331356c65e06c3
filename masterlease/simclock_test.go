package masterlease

import "time"

// simClock is a node's monotonic clock in the simulation: continuous,
// running at a rate within ±eps of global (true) time, the rate changing
// at random moments.
type simClock struct {
	now       *time.Duration // global time, owned by the simulation
	lastT     time.Duration  // global time of the last rate change
	lastLocal time.Duration  // local reading then
	rate      float64
}

var simEpoch = time.Unix(1_000_000, 0)

func (c *simClock) local(t time.Duration) time.Duration {
	return c.lastLocal + time.Duration(float64(t-c.lastT)*c.rate)
}

func (c *simClock) Now() time.Time { return simEpoch.Add(c.local(*c.now)) }

func (c *simClock) setRate(r float64) {
	c.lastLocal = c.local(*c.now)
	c.lastT = *c.now
	c.rate = r
}

// toGlobal maps a local reading of this clock to global time, assuming
// the current rate holds from now on (used to report a deadline).
func (c *simClock) toGlobal(local time.Time) time.Duration {
	l := local.Sub(simEpoch)
	return c.lastT + time.Duration(float64(l-c.lastLocal)/c.rate)
}
