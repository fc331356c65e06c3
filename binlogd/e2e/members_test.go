package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"phxgo/binlogd/localcluster"
	pb "phxgo/proto"
)

// TestMembersAddRemove: under a steady write load a 4th node is added
// (its MariaDB seeded from a replica's dump, its binlogd joining through
// the log), catches up, and then a replica is removed, back to 3 nodes.
// Writes continue throughout; no acknowledged write is lost and every
// member's MariaDB ends with identical data.
func TestMembersAddRemove(t *testing.T) {
	c, master, w := setupWorkload(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	replica := master%3 + 1

	// binlogd init -probe over a running cluster's addresses is refused.
	st, err := c.Status(ctx, master)
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"init", "-probe", "-out", t.TempDir(), "-dir", t.TempDir() + "/n{id}"}
	for _, m := range st.Members {
		args = append(args, "-node", fmt.Sprintf("%d=%s,%s", m.Id, m.GrpcAddr, m.MysqlAddr))
	}
	out, err := exec.Command(filepath.Join(binDir, "binlogd"), args...).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "already answers") {
		t.Fatalf("binlogd init over a running cluster: %v\n%s", err, out)
	}

	start := time.Now()
	id, err := c.AddNode(ctx, replica, master)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("node %d added (seeded from node %d) in %.2fs; %s", id, replica, time.Since(start).Seconds(), w)
	// It catches up: its MariaDB reaches what the log held when it was added.
	awaitMemberAt(ctx, t, c, master, id, func(st *pb.NodeStatus) bool { return len(st.Members) == 4 })
	w.awaitAcks(t, 50, time.Minute)

	// Removing the master is refused: switch over first.
	ma, err := c.Admin(master)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ma.RemoveMember(ctx, &pb.RemoveMemberRequest{Id: master}); err == nil {
		t.Fatal("removing the master was accepted")
	}

	// Remove a replica (not the new node), back to 3.
	gone := replica
	start = time.Now()
	if err := c.RemoveNode(ctx, gone, master); err != nil {
		t.Fatal(err)
	}
	t.Logf("node %d removed in %.2fs; %s", gone, time.Since(start).Seconds(), w)
	r, err := ma.Members(ctx, &pb.MembersRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Members) != 3 {
		t.Fatalf("members after remove: %v", r.Members)
	}

	// A learner joins the running cluster the operator's way (binlogd
	// members add -learner), follows the log without voting, and is
	// promoted to voter and demoted back through the log.
	seed := id
	start = time.Now()
	lid, err := c.AddLearner(ctx, seed, master)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("learner %d added in %.2fs; %s", lid, time.Since(start).Seconds(), w)
	awaitMemberAt(ctx, t, c, master, lid, func(st *pb.NodeStatus) bool { return st.Learner })
	if err := c.Promote(ctx, lid, master); err != nil {
		t.Fatal(err)
	}
	awaitMemberAt(ctx, t, c, master, lid, func(st *pb.NodeStatus) bool { return !st.Learner })
	if err := c.Demote(ctx, lid, master); err != nil {
		t.Fatal(err)
	}
	awaitMemberAt(ctx, t, c, master, lid, func(st *pb.NodeStatus) bool { return st.Learner })
	finish(t, c, w, time.Time{}, "add and remove")
}

// awaitMemberAt waits until node id says what want checks (nil: anything)
// and its MariaDB holds what master's log held when the wait began.
func awaitMemberAt(ctx context.Context, t *testing.T, c *localcluster.Cluster, master, id uint32, want func(*pb.NodeStatus) bool) {
	t.Helper()
	ms, err := c.Status(ctx, master)
	if err != nil {
		t.Fatal(err)
	}
	target := gtidSeq(ms.LastValidGtid)
	for {
		st, err := c.Status(ctx, id)
		if err == nil && (want == nil || want(st)) && gtidSeq(st.MysqlGtidPos) >= target {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("node %d never reached sequence %d in the wanted role: %v %v", id, target, st, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// gtidSeq is the sequence number of a single-domain GTID "d-s-n".
func gtidSeq(g string) int {
	n := 0
	dashes := 0
	for _, ch := range g {
		switch {
		case ch == '-':
			dashes++
			n = 0
		case dashes == 2 && ch >= '0' && ch <= '9':
			n = n*10 + int(ch-'0')
		}
	}
	return n
}
