package localcluster

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"phxgo/binlogd/config"
	"phxgo/paxos"
	pb "phxgo/proto"
)

// IDs returns the cluster's current members: nodes 1..Spec.Nodes less
// the removed ones.
func (c *Cluster) IDs() []uint32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var ids []uint32
	for id := 1; id <= c.Spec.Nodes; id++ {
		if !c.gone[uint32(id)] {
			ids = append(ids, uint32(id))
		}
	}
	return ids
}

// AddNode adds node Spec.Nodes+1 to the running cluster, as an operator
// would: write its config (join), seed its MariaDB from node seedFrom's
// (a replica: binlogd seed, a dump over its local socket), start it, and
// add it through the log via node via's Admin service. It returns the new
// id once the change is active; the node then catches up from the log.
func (c *Cluster) AddNode(ctx context.Context, seedFrom, via uint32) (uint32, error) {
	return c.addNode(ctx, seedFrom, via, false, false)
}

// AddLearner is AddNode for a learner (binlogd members add -learner):
// it follows the log and serves reads but never votes; Promote makes it
// a voter.
func (c *Cluster) AddLearner(ctx context.Context, seedFrom, via uint32) (uint32, error) {
	return c.addNode(ctx, seedFrom, via, false, true)
}

// AddNodeByReseed is AddNode with the new node's MariaDB copied by
// `binlogd reseed -source-node seedFrom` (mariadb-backup streamed over
// seedFrom's gRPC port with the new node's own certificate), the way
// scripts/seed-node.sh does it on separate hosts.
func (c *Cluster) AddNodeByReseed(ctx context.Context, seedFrom, via uint32) (uint32, error) {
	return c.addNode(ctx, seedFrom, via, true, false)
}

func (c *Cluster) addNode(ctx context.Context, seedFrom, via uint32, byReseed, learner bool) (uint32, error) {
	c.mu.Lock()
	id := uint32(c.Spec.Nodes + 1)
	if learner && id <= 9 {
		c.Spec.Learners = append(c.Spec.Learners, int(id))
	}
	c.mu.Unlock()
	if id > 9 {
		return 0, fmt.Errorf("localcluster: at most 9 nodes")
	}
	var ms []config.Member
	for _, m := range c.IDs() {
		ms = append(ms, c.Spec.member(int(m)))
	}
	ms = append(ms, c.Spec.member(int(id)))
	if err := c.Spec.writeNodeConfig(int(id), ms, true); err != nil {
		return 0, err
	}
	dir := c.Spec.NodeDir(int(id))
	cmd := exec.CommandContext(ctx, filepath.Join(c.Spec.BinDir, "binlogd"), "seed",
		"-config", filepath.Join(dir, "binlogd.json"),
		"-from-socket", filepath.Join(c.Spec.NodeDir(int(seedFrom)), "mysql", "mysqld.sock"))
	if byReseed {
		cmd = exec.CommandContext(ctx, filepath.Join(c.Spec.BinDir, "binlogd"), "reseed",
			"-config", filepath.Join(dir, "binlogd.json"), "-source-node", fmt.Sprint(seedFrom))
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return 0, fmt.Errorf("localcluster: seed node %d from node %d: %w\n%s", id, seedFrom, err, out)
	}
	c.mu.Lock()
	c.Spec.Nodes = int(id)
	c.mu.Unlock()
	if err := c.StartNode(id); err != nil {
		return 0, err
	}
	a, err := c.Admin(via)
	if err != nil {
		return 0, err
	}
	m := c.Spec.member(int(id))
	if err := whileNoQuorum(ctx, func() error {
		_, err := a.AddMember(ctx, &pb.AddMemberRequest{Member: &pb.Member{Id: id, GrpcAddr: m.GRPCAddr,
			MysqlAddr: m.MySQLAddr, ProxyAddr: m.ProxyAddr, Learner: m.Learner}})
		return err
	}); err != nil {
		return 0, fmt.Errorf("localcluster: add node %d via node %d: %w", id, via, err)
	}
	return id, c.WriteInfo()
}

// RemoveNode removes node id through the log via node via's Admin
// service, then stops its processes (binlogd stops its MariaDB safely).
func (c *Cluster) RemoveNode(ctx context.Context, id, via uint32) error {
	a, err := c.Admin(via)
	if err != nil {
		return err
	}
	if err := whileNoQuorum(ctx, func() error {
		_, err := a.RemoveMember(ctx, &pb.RemoveMemberRequest{Id: id})
		return err
	}); err != nil {
		return fmt.Errorf("localcluster: remove node %d via node %d: %w", id, via, err)
	}
	c.mu.Lock()
	if c.gone == nil {
		c.gone = map[uint32]bool{}
	}
	c.gone[id] = true
	c.mu.Unlock()
	for _, proc := range []string{"sqlproxy", "binlogd"} {
		if pid := c.Pid(id, proc); pid != 0 {
			_ = syscall.Kill(pid, syscall.SIGTERM)
		}
	}
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	for _, proc := range []string{"sqlproxy", "binlogd", "mariadbd"} {
		if proc == "mariadbd" {
			c.stopMySQL(wctx, id)
		}
		if pid := c.Pid(id, proc); pid != 0 {
			if err := waitGone(wctx, pid); err != nil {
				return err
			}
		}
	}
	return c.WriteInfo()
}

// Promote makes learner id a voter through the log via node via
// (binlogd members promote); Demote makes voter id a learner. Each
// returns once the change is active.
func (c *Cluster) Promote(ctx context.Context, id, via uint32) error {
	return c.flipLearner(ctx, id, via, false)
}

// Demote: see Promote.
func (c *Cluster) Demote(ctx context.Context, id, via uint32) error {
	return c.flipLearner(ctx, id, via, true)
}

func (c *Cluster) flipLearner(ctx context.Context, id, via uint32, learner bool) error {
	a, err := c.Admin(via)
	if err != nil {
		return err
	}
	err = whileNoQuorum(ctx, func() error {
		var err error
		if learner {
			_, err = a.DemoteMember(ctx, &pb.DemoteMemberRequest{Id: id})
		} else {
			_, err = a.PromoteMember(ctx, &pb.PromoteMemberRequest{Id: id})
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("localcluster: make node %d learner=%v via node %d: %w", id, learner, via, err)
	}
	c.mu.Lock()
	c.Spec.Learners = slices.DeleteFunc(c.Spec.Learners, func(l int) bool { return l == int(id) })
	if learner {
		c.Spec.Learners = append(c.Spec.Learners, int(id))
	}
	c.mu.Unlock()
	return c.WriteInfo()
}

// whileNoQuorum runs change until it is not refused for want of a
// quorum, or ctx ends. The leader refuses a change before proposing it
// when it has not heard from a quorum within two election timeouts
// (paxos.ErrNoQuorum, codes.Unavailable), so a retry cannot apply it
// twice. On a loaded host that happens for a moment right after another
// membership change; any other error, an unknown outcome included, is
// returned at once.
func whileNoQuorum(ctx context.Context, change func() error) error {
	for {
		err := change()
		if status.Code(err) != codes.Unavailable || !strings.Contains(status.Convert(err).Message(), paxos.ErrNoQuorum.Error()) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(100 * time.Millisecond):
		}
	}
}
