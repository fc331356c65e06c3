package main

import pb "phxgo/proto"

// isLearner reports whether m is a learner (a non-voting member with
// MariaDB). Until the membership carries the flag, no member is one.
func isLearner(m *pb.Member) bool { return false }
