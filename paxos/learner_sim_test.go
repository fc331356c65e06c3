package paxos

import (
	"math/rand"
	"testing"
)

// flipRandom promotes or demotes one random member of ms in place, keeping
// at least one voter; false if it cannot.
func flipRandom(rng *rand.Rand, ms []Member) bool {
	k := rng.Intn(len(ms))
	if !ms[k].Learner {
		voters := 0
		for _, m := range ms {
			if !m.Learner {
				voters++
			}
		}
		if voters == 1 {
			return false
		}
	}
	ms[k].Learner = !ms[k].Learner
	return true
}

// TestSimLearners: TestSimMembership with learners: adds are learners half
// the time, and a third of the changes promote or demote a member, under
// loss, partitions, crashes and campaigns (a learner's Campaign is
// refused). Agreement must hold on every index and every configuration,
// and the changes must include promotions and demotions.
func TestSimLearners(t *testing.T) {
	o := simOpts{nodes: 3, spares: 2, changes: true, learners: true, steps: 12000, drop: 0.1, dup: 0.05, partitions: true, crashes: true, campaigns: true}
	flips, learnerLeads := 0, 0
	n := max(*flagSeeds/2, 5)
	for seed := int64(1); seed <= int64(n); seed++ {
		if *flagSeed >= 0 {
			seed = *flagSeed
		}
		s := newSim(t, seed, o)
		s.faulty = true
		s.faults()
		s.heal()
		for _, id := range s.ids {
			nd := s.nodes[id]
			if nd.up && nd.core.hist != nil {
				flips += countFlips(nd.core.hist)
				break
			}
		}
		learnerLeads += s.learnerLeads
		s.close()
		if t.Failed() || *flagSeed >= 0 {
			return
		}
	}
	t.Logf("%d promotions and demotions chosen over %d seeds", flips, n)
	if flips == 0 {
		t.Fatal("no promotion or demotion was ever chosen")
	}
	if learnerLeads > 0 {
		t.Fatalf("a learner led %d times", learnerLeads)
	}
}

// countFlips counts the changes in h that promoted or demoted a member.
func countFlips(h *history) int {
	k := 0
	for i := 1; i < len(h.items); i++ {
		prev := map[uint32]bool{}
		for _, m := range h.items[i-1].Members {
			prev[m.ID] = m.Learner
		}
		for _, m := range h.items[i].Members {
			if l, ok := prev[m.ID]; ok && l != m.Learner {
				k++
			}
		}
	}
	return k
}

// checkLearnerLeads counts n leading, right after a tick, while the
// configuration of its next instance (active, so it knows it) makes it a
// learner: a demoted leader steps down on the tick its demotion becomes
// active (checkRemoved), and a learner never wins phase 1.
func (s *sim) checkLearnerLeads(n *simNode) {
	c := n.core
	if c == nil || c.role != leader || c.hist == nil {
		return
	}
	if m := c.hist.at(c.chosen + 1); m.IsLearner(c.id) && c.chosen+1 >= c.hist.latest().Active {
		s.learnerLeads++
		s.t.Errorf("seed %d: node %d leads at chosen %d while a learner in the members of index %d", s.seed, c.id, c.chosen, m.Index)
	}
}
