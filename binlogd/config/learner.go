package config

import "fmt"

// Learners. A learner (members[].learner) is a data node, with MariaDB and
// sqlproxy, that follows the Paxos log and serves reads like a replica,
// but never votes, never counts toward a majority and is never master.

// IsLearner reports whether this node starts as a learner (its members[]
// entry says "learner": true). The log decides once it holds a change.
func (c *Config) IsLearner() bool { return c.Self().Learner }

// Learners returns the ids of the members that start as learners.
func (c *Config) Learners() []uint32 {
	var ids []uint32
	for _, m := range c.Members {
		if m.Learner {
			ids = append(ids, m.ID)
		}
	}
	return ids
}

// voters counts the members that vote.
func (c *Config) voters() int { return len(c.Members) - len(c.Learners()) }

// validateLearners: a learner serves reads, so it runs MariaDB (not a
// witness), and at least one data node votes, or nobody could be master.
func (c *Config) validateLearners() error {
	dataVoters := 0
	for i, m := range c.Members {
		if m.Learner && m.Witness {
			return c.bad(fmt.Sprintf("members[%d].learner", i), "node %d is a witness and a learner: a witness only votes, a learner never does; choose one", m.ID)
		}
		if !m.Learner && !m.Witness {
			dataVoters++
		}
	}
	if dataVoters == 0 && len(c.Learners()) > 0 {
		return c.bad("members", "no member both votes and runs MariaDB: learners and witnesses are never master")
	}
	return nil
}
