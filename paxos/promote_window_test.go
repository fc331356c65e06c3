package paxos

import (
	"fmt"
	"testing"
)

// TestSimPromotionKeepsTakingCommands: a leader promotes a learner. When
// the promotion becomes active its phase-1 promisers are no majority of
// the four voters, so it runs phase 1 again (canLead). Commands proposed
// on it meanwhile must be taken, even if it has not heard from a
// majority of the new voters lately (here: every peer quiet for 3E
// ticks when that phase 1 starts). A refusal (ErrNoQuorum) there made
// binlogd's master stop capture on the refused batch and step down, so
// a promotion under write load became a failover (e2e TestLearner in CI:
// "batch not durable: ... paxos: no quorum reachable" 3 ms before the
// new phase 1 won). The commands taken are chosen once it leads again.
func TestSimPromotionKeepsTakingCommands(t *testing.T) {
	for seed := int64(1); seed <= 24; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			s := newLearnerSim(t, seed)
			s.change(learnerMembers([]uint32{1, 2, 3}, 4))
			lead := s.leaderID()
			ld := s.nodes[lead]
			cur := s.proposeChange(ld, learnerMembers([]uint32{1, 2, 3, 4}))
			var taken []string
			aged := false
			for end := s.now + 40000; s.now < end; {
				m := ld.core.hist.latest()
				if m.Index != cur.Index && ld.core.role == leader && ld.core.chosen > m.Active && len(ld.waiting) == 0 {
					break
				}
				// Light load, so the pipeline drains and the first command
				// past the activation finds every instance before it
				// chosen; a command at every step of the new phase 1.
				if ld.core.role == candidate {
					if !aged {
						aged = true
						for i, p := range ld.core.peers {
							if p != ld.core.id {
								ld.core.lastHeard[i] = ld.core.tick - 3*int64(ld.core.cfg.ElectionTicks)
							}
						}
					}
				} else if s.now%25 != 0 {
					s.stepOnce()
					continue
				}
				d := fmt.Sprintf("w%d", s.now)
				seq, err := ld.rn.Propose([]byte(d), 0)
				if err != nil {
					t.Fatalf("step %d: %v (role %v, chosen %d, members active at %d)", s.now, err, ld.core.role, ld.core.chosen, m.Active)
				}
				ld.waiting[seq] = d
				if ld.core.role == candidate {
					taken = append(taken, d)
				}
				s.process(ld)
				s.stepOnce()
			}
			if !aged {
				s.fatalf("the leader never ran phase 1 again for the new members; %s", s.describe())
			}
			if ld.core.role != leader || len(ld.waiting) > 0 {
				s.fatalf("after the promotion: node %d role %v, %d commands not applied; %s", lead, ld.core.role, len(ld.waiting), s.describe())
			}
			for _, d := range taken {
				if _, ok := s.ok[d]; !ok {
					s.fatalf("%s, taken during phase 1, was not chosen", d)
				}
			}
			t.Logf("%d commands taken during the new phase 1", len(taken))
		})
	}
}
