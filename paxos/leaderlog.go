package paxos

import (
	"log/slog"
	"time"
)

// leaderLogger logs this node's leadership changes as the run loop
// publishes them: winning a ballot, stepping down (with the cause and,
// for a silent quorum, how long each peer had been silent) and a
// follower's election timeout (it stopped believing in its leader). Each
// needs an election timeout or a peer's phase 1 to happen, so even a
// flapping cluster logs a few lines a second at most, and every line
// marks a pause in commits an operator may want to explain.
type leaderLogger struct {
	leading   bool
	stepDowns [NumStepDownCauses]uint64
	timeouts  uint64
}

// tick is the engine's tick; silentLimit how long a leader may go
// without hearing a majority.
func (l *leaderLogger) maybeLog(log *slog.Logger, c *softState, tick, silentLimit time.Duration) {
	if c.StepDowns != l.stepDowns {
		sd := c.LastStepDown
		attrs := []any{"cause", sd.Cause.String(), "ballot_round", sd.Ballot.Round, "ballot_node", sd.Ballot.Node, "chosen", c.Chosen}
		if sd.Peer != 0 {
			attrs = append(attrs, "peer", sd.Peer)
		}
		if sd.Cause == StepDownQuorumSilent {
			attrs = append(attrs, "silent", sd.silenceText(tick.Milliseconds()), "limit", silentLimit)
			log.Warn("paxos: stepped down as leader: no majority answered", attrs...)
		} else {
			log.Info("paxos: stepped down as leader", attrs...)
		}
		l.stepDowns = c.StepDowns
	}
	if c.LeaderTimeouts != l.timeouts {
		log.Info("paxos: leader silent for an election timeout; asking the peers whether it is gone",
			"leader", c.LostLeader, "chosen", c.Chosen)
		l.timeouts = c.LeaderTimeouts
	}
	if leading := c.Role == leader; leading != l.leading {
		if leading {
			log.Info("paxos: leading", "ballot_round", c.Promised.Round, "ballot_node", c.Promised.Node, "chosen", c.Chosen)
		}
		l.leading = leading
	}
}
