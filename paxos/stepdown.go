package paxos

import (
	"fmt"
	"strings"
)

// Why a leader stopped leading. Every leader change costs the cluster a
// phase 1 and, in binlogd, re-proposed batches, so a node counts its
// step-downs by cause (Status.StepDowns) and logs each with what it knew
// then: a lost quorum (followers too slow or cut off to answer for two
// election timeouts) reads differently from a rival's higher ballot.

// StepDownCause is why a leader became a follower.
type StepDownCause uint8

const (
	// StepDownQuorumSilent: no majority answered for 2 election timeouts.
	StepDownQuorumSilent StepDownCause = iota
	// StepDownHigherBallot: a peer's Prepare or Accept under a higher
	// ballot (another node ran phase 1).
	StepDownHigherBallot
	// StepDownRejected: a peer refused a vote, naming a higher promise.
	StepDownRejected
	// StepDownRemoved: the configuration no longer counts this node a voter.
	StepDownRemoved
	// StepDownSuperseded: a peer's log or snapshot decided an instance
	// this leader proposed.
	StepDownSuperseded
	// StepDownOddLog: the majority of the nodes' log digests named this
	// node's log the odd one (core_odd.go).
	StepDownOddLog
	NumStepDownCauses
)

var stepDownNames = [NumStepDownCauses]string{"quorum_silent", "higher_ballot", "rejected", "removed", "superseded", "odd_log"}

func (s StepDownCause) String() string {
	if s < NumStepDownCauses {
		return stepDownNames[s]
	}
	return fmt.Sprintf("cause(%d)", uint8(s))
}

// stepDown is the last step-down's record (softState.LastStepDown).
type stepDown struct {
	Cause  StepDownCause
	Peer   uint32 // the peer whose ballot or refusal caused it (0: none)
	Ballot Ballot // that peer's ballot, or the ballot this node led under
	// Silent lists, for StepDownQuorumSilent, each peer's ticks since
	// this node last heard it.
	Silent []peerSilence
}

type peerSilence struct {
	ID    uint32
	Ticks int64
}

// silenceText renders Silent for a log line, in ticks of tick.
func (s stepDown) silenceText(tickMillis int64) string {
	var b strings.Builder
	for i, p := range s.Silent {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "node %d %dms", p.ID, p.Ticks*tickMillis)
	}
	return b.String()
}

// leaveLead records why this leader steps down and makes it a follower.
func (c *core) leaveLead(cause StepDownCause, peer uint32, b Ballot) {
	c.noteStepDown(cause, peer, b)
	c.becomeFollower(0)
}

// noteStepDown records a step-down about to happen, if this node leads.
func (c *core) noteStepDown(cause StepDownCause, peer uint32, b Ballot) {
	if c.role != leader {
		return
	}
	sd := stepDown{Cause: cause, Peer: peer, Ballot: b}
	if cause == StepDownQuorumSilent {
		for i, p := range c.peers {
			if p != c.id {
				sd.Silent = append(sd.Silent, peerSilence{ID: p, Ticks: c.tick - c.lastHeard[i]})
			}
		}
	}
	if sd.Ballot == (Ballot{}) {
		sd.Ballot = c.ballot
	}
	c.stepDowns[cause]++
	c.lastStepDown = sd
}
