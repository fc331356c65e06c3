package node

import (
	"encoding/json"
	"strings"
	"testing"

	"phxgo/binlogd/config"
	"phxgo/paxos"
)

// TestLeaseTargetLearner: no switchover or handover names a learner.
func TestLeaseTargetLearner(t *testing.T) {
	ms := []config.Member{{ID: 1}, {ID: 2}, {ID: 3}, {ID: 4, Learner: true}}
	if err := leaseTargetError(ms, 1, 4); err == nil || !strings.Contains(err.Error(), "learner") {
		t.Fatalf("switchover to a learner: %v", err)
	}
	if err := leaseTargetError(ms, 1, 2); err != nil {
		t.Fatalf("switchover to a voter: %v", err)
	}
}

// TestMemberEntryLearner: the log's learner flag wins over the entry's
// (promote and demote flip it in the Paxos member, not in Info), and the
// reply carries it.
func TestMemberEntryLearner(t *testing.T) {
	n := &Node{cfg: &config.Config{Members: []config.Member{{ID: 1, GRPCAddr: "a:1", MySQLAddr: "a:2"}}}}
	info, _ := json.Marshal(config.Member{ID: 4, GRPCAddr: "d:1", MySQLAddr: "d:2", Learner: true})
	for _, c := range []struct {
		pm   paxos.Member
		want bool
	}{
		{paxos.Member{ID: 4, Addr: "d:1", Info: info, Learner: false}, false}, // promoted
		{paxos.Member{ID: 4, Addr: "d:1", Info: info, Learner: true}, true},
		{paxos.Member{ID: 1, Addr: "a:1", Learner: true}, true}, // initial member, from the config
		{paxos.Member{ID: 9, Addr: "z:1", Learner: true}, true}, // unknown: the log alone
	} {
		e := n.memberEntry(c.pm)
		if e.Learner != c.want || e.ID != c.pm.ID {
			t.Errorf("member %d (log learner %v): entry %+v", c.pm.ID, c.pm.Learner, e)
		}
		if r := membersReply(paxos.Membership{}, false, []config.Member{e}); r.Members[0].Learner != c.want {
			t.Errorf("member %d: reply learner %v", c.pm.ID, r.Members[0].Learner)
		}
	}
}
