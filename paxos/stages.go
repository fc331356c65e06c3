package paxos

import (
	"sync"
	"time"
)

// Stage is one part of a local proposal's way through the leader, for
// WithStageObserver: together they split the commit latency that
// WithCommitObserver reports.
type Stage uint8

const (
	// StageQueue: a command's submission (Propose) to the leader
	// proposing the value that carries it (batching, the linger, a full
	// window). Observed per command on the leader.
	StageQueue Stage = iota
	// StageAcceptRound: a value proposed to a quorum of votes counted
	// (the leader's own counted at once; the followers' syncs and the
	// round trip). Observed per value on the leader.
	StageAcceptRound
	// StageChosenToApplied: a quorum counted to the value applied here
	// (waiting for the leader's own save, the pipeline's order, the
	// applier). Observed per value on the leader.
	StageChosenToApplied
	numStages
)

func (s Stage) String() string {
	return [...]string{"queue", "accept_round", "chosen_to_applied"}[s]
}

// WithStageObserver makes the node call f with the time each stage of
// its own values took while it leads (Stage). f runs on the driver's and
// the applier's goroutines: keep it short and safe for concurrent use.
func WithStageObserver(f func(Stage, time.Duration)) Option {
	return func(o *options) { o.stageObserver = f }
}

// stageClock times the stages of values this node proposes as leader:
// the run loop marks proposal and quorum, the applier the application.
// Marks for values it never applies here (a lost leadership) are dropped
// when a later index is applied.
type stageClock struct {
	observe func(Stage, time.Duration)
	mu      sync.Mutex
	marks   map[uint64]*stageMark
	chosen  uint64 // run loop: highest chosen index seen
}

type stageMark struct{ proposed, chosen time.Time }

func newStageClock(f func(Stage, time.Duration)) *stageClock {
	if f == nil {
		return nil
	}
	return &stageClock{observe: f, marks: make(map[uint64]*stageMark)}
}

// emitted records what one Ready shows (run loop): the values this
// leader proposed in it (its own accepts under its ballot), and the
// core's chosen index after it.
func (s *stageClock) emitted(rd *Ready, soft softState) {
	if s == nil {
		return
	}
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if soft.Role == leader {
		for _, a := range rd.Update.Accepted {
			if a.Ballot == soft.Promised && s.marks[a.Index] == nil {
				s.marks[a.Index] = &stageMark{proposed: now}
			}
		}
	}
	chosen := soft.Chosen
	for i := s.chosen + 1; i <= chosen && chosen-i < 1<<16; i++ {
		if mk := s.marks[i]; mk != nil && mk.chosen.IsZero() {
			mk.chosen = now
			s.observe(StageAcceptRound, now.Sub(mk.proposed))
		}
	}
	s.chosen = max(s.chosen, chosen)
}

// proposedAt is when the value at index was proposed here (applier), or
// zero.
func (s *stageClock) proposedAt(index uint64) time.Time {
	if s == nil {
		return time.Time{}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if mk := s.marks[index]; mk != nil {
		return mk.proposed
	}
	return time.Time{}
}

// applied records that every index up to index is applied (applier).
func (s *stageClock) applied(index uint64) {
	if s == nil {
		return
	}
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, mk := range s.marks {
		if i > index {
			continue
		}
		if !mk.chosen.IsZero() {
			s.observe(StageChosenToApplied, now.Sub(mk.chosen))
		}
		delete(s.marks, i)
	}
}
