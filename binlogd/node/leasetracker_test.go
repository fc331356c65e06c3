package node

import (
	"testing"
	"time"

	"phxgo/masterlease"
)

// TestLeaseTrackerCauses: how each master term began, as became_master
// and became_replica report it. A master whose lease ran out and who took
// it again (a new epoch, the same node: seen in a bench on a saturated
// host) is a failover from itself; before, it said "initial" with no
// previous master. A switchover's target takes a term of its own right
// after the grant: that stays a switchover.
func TestLeaseTrackerCauses(t *testing.T) {
	const self = 2
	st := func(master uint32, epoch uint64, expiry time.Time) masterlease.Status {
		return masterlease.Status{State: masterlease.State{Master: master, Epoch: epoch}, FollowerExpiry: expiry}
	}
	held := func(epoch uint64) masterlease.Status {
		s := st(self, epoch, time.Time{})
		s.Deadline = time.Now().Add(time.Hour)
		return s
	}
	later, past := time.Now().Add(time.Hour), time.Now().Add(-time.Second)
	var lt leaseTracker
	steps := []struct {
		name      string
		st        masterlease.Status
		want      masterChange
		replicaOf bool
	}{
		{"first sight, node 1 master", st(1, 1, later), masterChange{cause: "initial"}, true},
		{"node 1 renews", st(1, 1, later), masterChange{cause: "initial"}, false},
		{"node 1 hands over to node 3 while its lease runs", st(3, 2, later), masterChange{previous: 1, cause: "switchover"}, true},
		{"node 3's lease runs out here", st(3, 2, past), masterChange{previous: 1, cause: "switchover"}, false},
		{"node 3 takes the lease again: nothing this node reports", st(3, 3, later), masterChange{previous: 1, cause: "switchover"}, false},
		{"node 3 hands over to this node: the grant, no deadline here yet", st(self, 4, time.Time{}), masterChange{previous: 3, cause: "switchover"}, false},
		{"this node takes its own term after the grant: still the switchover", held(5), masterChange{previous: 3, cause: "switchover"}, false},
		{"this node renews", held(5), masterChange{previous: 3, cause: "switchover"}, false},
		{"this node's lease runs out", st(self, 5, time.Time{}), masterChange{previous: 3, cause: "switchover"}, false},
		{"it takes the lease again: a failover from itself", held(6), masterChange{previous: self, cause: "failover"}, false},
		{"it fences itself", st(0, 7, time.Time{}), masterChange{previous: self, cause: "failover"}, false},
		{"node 1 takes over after the fence", st(1, 8, later), masterChange{previous: self, cause: "failover"}, true},
	}
	for _, s := range steps {
		got, ok := lt.note(s.st, self)
		if got != s.want || ok != s.replicaOf {
			t.Fatalf("%s: change %+v, became replica %v; want %+v, %v", s.name, got, ok, s.want, s.replicaOf)
		}
	}
}
