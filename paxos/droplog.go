package paxos

import (
	"log/slog"
	"time"
)

// dropLogger logs the peer messages the core dropped (core_validate.go)
// at most once per dropLogEvery: a flood of forged messages must not
// become a flood of log lines. Each line carries the counts since the
// previous one and the latest message dropped.
type dropLogger struct {
	at        time.Time
	logged    [NumDropReasons]uint64
	exhausted bool
}

const dropLogEvery = 10 * time.Second

func (d *dropLogger) maybeLog(log *slog.Logger, c *softState, now time.Time) {
	if c.Exhausted && !d.exhausted {
		d.exhausted = true
		log.Error("paxos: this node's ballot rounds reached the maximum; it will not run elections any more (forged messages?)",
			"max_round", MaxRound, "promised_round", c.Promised.Round)
	}
	if c.Dropped == d.logged || now.Sub(d.at) < dropLogEvery {
		return
	}
	attrs := make([]any, 0, 2*NumDropReasons+2)
	for r := DropReason(0); r < NumDropReasons; r++ {
		if k := c.Dropped[r] - d.logged[r]; k > 0 {
			attrs = append(attrs, r.String(), k)
		}
	}
	attrs = append(attrs, "latest", c.LastDrop.String())
	log.Warn("paxos: dropped hostile or out-of-range peer messages", attrs...)
	d.logged, d.at = c.Dropped, now
}
