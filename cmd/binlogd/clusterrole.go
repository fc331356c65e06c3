package main

import (
	"phxgo/binlogd/config"
	pb "phxgo/proto"
)

// The ROLE column of `binlogd cluster status`: what a member is in the
// cluster. A member's own status says master, candidate, replica, unsafe
// or witness; the membership adds what the status cannot say by itself:
// a learner replicates like a replica (its status says replica) but never
// votes and never becomes master, and an unreachable member still shows
// whether it is a witness or a learner.
const (
	roleWitness = "witness"
	roleLearner = "learner"
	roleReplica = "replica"
)

// kind is a member's kind in the membership: a voter with MariaDB
// (zero), a witness, or a learner.
type kind uint8

const (
	kindVoter kind = iota
	kindWitness
	kindLearner
)

func memberKind(m *pb.Member) kind {
	switch {
	case m.GetWitness():
		return kindWitness
	case m.GetLearner():
		return kindLearner
	}
	return kindVoter
}

func configMemberKind(m config.Member) kind {
	switch {
	case m.Witness:
		return kindWitness
	case m.Learner:
		return kindLearner
	}
	return kindVoter
}

// rowRole is the row's ROLE. A status role wins except "replica" of a
// learner, which is "learner"; with no status, the membership's kind or
// "-".
func rowRole(r *clusterRow) string {
	st := r.Status
	switch {
	case st == nil && r.kind == kindWitness:
		return roleWitness
	case st == nil && r.kind == kindLearner:
		return roleLearner
	case st == nil:
		return "-"
	case st.Role == roleReplica && r.kind == kindLearner:
		return roleLearner
	case st.Role == "unknown" && r.kind == kindWitness: // an older binlogd on a witness
		return roleWitness
	}
	return st.Role
}
