package main

import (
	"context"
	"encoding/json"
	"net"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"

	pb "phxgo/proto"
)

// judge is the whole policy of the exit code: a table of clusters and the
// problems each must report.
func TestJudge(t *testing.T) {
	const v = "v0.4.0"
	master := func(id uint32) *statusJSON {
		return &statusJSON{NodeID: id, Role: "master", MasterID: id, MySQLUp: true, Version: v, LeaseValid: true}
	}
	replica := func(id, m uint32) *statusJSON {
		return &statusJSON{NodeID: id, Role: "replica", MasterID: m, MySQLUp: true, Version: v, LagSeconds: 0}
	}
	with := func(s *statusJSON, f func(*statusJSON)) *statusJSON { f(s); return s }
	sumA, sumB := strings.Repeat("a", 64), strings.Repeat("b", 64)
	digest := func(s *statusJSON, sum string) *statusJSON {
		s.LogDigests = []logDigestJSON{{First: 1, Last: 8, Sum: sumA}, {First: 9, Last: 16, Sum: sum}}
		return s
	}
	saw := func(s *statusJSON, peer, odd uint32) *statusJSON {
		s.LogDivergences = append(s.LogDivergences, logDivergenceJSON{Peer: peer, First: 9, Last: 16, Ours: sumA, Theirs: sumB, Known: 3, HoldingOurs: 2, HoldingTheirs: 1, OddNode: odd})
		return s
	}
	rows := func(sts ...*statusJSON) []clusterRow {
		var out []clusterRow
		for i, s := range sts {
			r := clusterRow{ID: uint32(i + 1)}
			if s == nil {
				r.Error = "connection refused"
			} else {
				r.Status = s
			}
			out = append(out, r)
		}
		return out
	}
	lim := lagLimits{seconds: 30, transactions: 1000}
	for _, tc := range []struct {
		name     string
		rows     []clusterRow
		healthy  bool
		master   uint32
		health   []string
		problems []string
	}{
		{"healthy", rows(master(1), replica(2, 1), replica(3, 1)), true, 1,
			[]string{"ok", "ok", "ok"}, []string{}},
		{"a member unreachable", rows(master(1), replica(2, 1), nil), false, 1,
			[]string{"ok", "ok", "unreachable"}, []string{"node 3 unreachable"}},
		{"no master", rows(replica(1, 0), replica(2, 0), replica(3, 0)), false, 0,
			[]string{"ok", "ok", "ok"}, []string{"no master"}},
		{"unsafe and reseed", rows(master(1), with(replica(2, 1), func(s *statusJSON) { s.Role = "unsafe"; s.ReseedNeeded = true }), replica(3, 1)), false, 1,
			[]string{"ok", "unsafe", "ok"}, []string{"node 2 unsafe, reseed_needed"}},
		{"mariadb down", rows(master(1), with(replica(2, 1), func(s *statusJSON) { s.MySQLUp = false; s.LagSeconds = -1 }), replica(3, 1)), false, 1,
			[]string{"ok", "mariadb_down", "ok"}, []string{"node 2 mariadb_down"}},
		{"a witness runs no MariaDB", rows(master(1), replica(2, 1), with(replica(3, 1), func(s *statusJSON) { s.Role = "witness"; s.MySQLUp = false; s.LagSeconds = -1 })), true, 1,
			[]string{"ok", "ok", "ok"}, []string{}},
		{"old binlogd: no version, mysql_up unset", rows(master(1), with(replica(2, 1), func(s *statusJSON) { s.MySQLUp = false; s.Version = "" }), replica(3, 1)), true, 1,
			[]string{"ok", "ok", "ok"}, []string{}},
		{"lag over seconds", rows(master(1), with(replica(2, 1), func(s *statusJSON) { s.LagSeconds = 31 }), replica(3, 1)), false, 1,
			[]string{"ok", "lagging", "ok"}, []string{"node 2 lagging"}},
		{"lag over transactions", rows(master(1), replica(2, 1), with(replica(3, 1), func(s *statusJSON) { s.LagTransactions = 1001 })), false, 1,
			[]string{"ok", "ok", "lagging"}, []string{"node 3 lagging"}},
		{"lag at the limits is fine; unknown seconds too", rows(master(1), with(replica(2, 1), func(s *statusJSON) { s.LagSeconds = 30; s.LagTransactions = 1000 }), with(replica(3, 1), func(s *statusJSON) { s.LagSeconds = -1 })), true, 1,
			[]string{"ok", "ok", "ok"}, []string{}},
		{"a replica sees another master", rows(master(1), replica(2, 1), replica(3, 2)), false, 1,
			[]string{"ok", "ok", "ok"}, []string{"node 3 sees master 2, node 1 is master"}},
		{"two masters", rows(master(1), master(2), replica(3, 1)), false, 0,
			[]string{"ok", "ok", "ok"}, []string{"more than one member says master: [1 2]"}},
		{"log digests agree", rows(digest(master(1), sumA), digest(replica(2, 1), sumA), digest(replica(3, 1), sumA)), true, 1,
			[]string{"ok", "ok", "ok"}, []string{}},
		{"a replica's log forked: the members' digests name it", rows(digest(master(1), sumA), digest(replica(2, 1), sumA), digest(replica(3, 1), sumB)), false, 1,
			[]string{"ok", "ok", "log_diverged"}, []string{"node 3 log_diverged",
				"log diverged at indexes [9, 16] (digests nodes 1, 2: aaaaaaaaaaaaaaaa, node 3: bbbbbbbbbbbbbbbb); the odd node 3: remove and add back with an empty dir"}},
		{"a fork only a member saw (the odd one's digests unknown)", rows(saw(master(1), 3, 3), replica(2, 1), replica(3, 1)), false, 1,
			[]string{"ok", "ok", "log_diverged"}, []string{"node 3 log_diverged",
				"log of node 1 diverged from node 3's at indexes [9, 16] (ours aaaaaaaaaaaaaaaa, theirs bbbbbbbbbbbbbbbb): node 3 is the odd one (2 of 3 digests known agree against it)"}},
		{"a fork seen one to one", rows(master(1), replica(2, 1), with(replica(3, 1), func(s *statusJSON) { saw(s, 1, 0) })), false, 1,
			[]string{"log_diverged", "ok", "log_diverged"}, []string{"node 1 log_diverged", "node 3 log_diverged",
				"log of node 3 diverged from node 1's at indexes [9, 16] (ours aaaaaaaaaaaaaaaa, theirs bbbbbbbbbbbbbbbb): which is odd is not known here"}},
		{"a node that recorded it is the odd one (after restarts: no digest left to compare)", rows(master(1), replica(2, 1), with(replica(3, 1), func(s *statusJSON) {
			s.LogOddRanges = []logOddJSON{{First: 9, Last: 16, Ours: sumB, Majority: sumA, Since: "2026-12-05T00:14:15Z"}}
		})), false, 1,
			[]string{"ok", "ok", "log_diverged"}, []string{"node 3 log_diverged",
				"log of node 3 is the odd one at indexes [9, 16] since 2026-12-05T00:14:15Z (ours bbbbbbbbbbbbbbbb, the majority's aaaaaaaaaaaaaaaa): remove it and add it back with an empty dir"}},
		{"two members, two digests: no majority", rows(digest(master(1), sumA), digest(replica(2, 1), sumB)), false, 1,
			[]string{"log_diverged", "log_diverged"}, []string{"node 1 log_diverged", "node 2 log_diverged",
				"log diverged at indexes [9, 16] (digests node 1: aaaaaaaaaaaaaaaa, node 2: bbbbbbbbbbbbbbbb); no majority: compare the nodes' data"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := clusterJSON{Members: tc.rows}
			judge(&v, lim)
			var health []string
			for _, r := range v.Members {
				health = append(health, r.Health)
			}
			if v.Healthy != tc.healthy || v.MasterID != tc.master || !reflect.DeepEqual(health, tc.health) || !reflect.DeepEqual(v.Problems, tc.problems) {
				t.Fatalf("healthy=%v master=%d health=%q problems=%q; want %v %d %q %q",
					v.Healthy, v.MasterID, health, v.Problems, tc.healthy, tc.master, tc.health, tc.problems)
			}
		})
	}
}

// Usage errors exit 2 before anything is dialled.
func TestClusterUsage(t *testing.T) {
	for _, args := range [][]string{nil, {"stats"}, {"status", "-bogus"}, {"status", "-timeout", "0s"},
		{"status", "-max-lag-seconds", "-1"}, {"status", "extra"}, {"status", "-addr", ""}} {
		var out, errb strings.Builder
		if code := cmdCluster(args, &out, &errb); code != exitUsage {
			t.Errorf("%q: exit %d, want %d (stderr %q)", args, code, exitUsage, errb.String())
		}
	}
}

// fakeAdmin is a member's Admin service over real gRPC: Members and
// Status as a healthy node answers them.
type fakeAdmin struct {
	pb.UnimplementedAdminServer
	members []*pb.Member
	st      *pb.NodeStatus
}

func (f *fakeAdmin) Members(context.Context, *pb.MembersRequest) (*pb.MembersReply, error) {
	return &pb.MembersReply{Members: f.members}, nil
}

func (f *fakeAdmin) Status(context.Context, *pb.StatusRequest) (*pb.NodeStatus, error) {
	return f.st, nil
}

// A member that accepts connections and never answers (a paused process,
// a black-holed host) costs the command one -timeout, not more, and is a
// row "unreachable"; the others are asked meanwhile.
func TestClusterStatusHungMember(t *testing.T) {
	var lns []net.Listener
	for range 3 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
	}
	var members []*pb.Member
	for i, ln := range lns {
		members = append(members, &pb.Member{Id: uint32(i + 1), GrpcAddr: ln.Addr().String()})
	}
	for i, ln := range lns[:2] {
		st := &pb.NodeStatus{NodeId: uint32(i + 1), Role: pb.Role_ROLE_REPLICA, MasterId: 1, MysqlUp: true, Version: "v0.4.0", Members: members}
		if i == 0 {
			st.Role, st.Ready, st.LeaseRemainingNs = pb.Role_ROLE_MASTER, true, int64(2*time.Second)
		}
		srv := grpc.NewServer()
		pb.RegisterAdminServer(srv, &fakeAdmin{members: members, st: st})
		go srv.Serve(ln)
		t.Cleanup(srv.Stop)
	}
	var held []net.Conn // the hung member: accepts, never speaks
	var mu sync.Mutex
	go func() {
		for {
			c, err := lns[2].Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		lns[2].Close()
		mu.Lock()
		for _, c := range held {
			c.Close()
		}
		mu.Unlock()
	})

	var out, errb strings.Builder
	start := time.Now()
	code := cmdCluster([]string{"status", "-addr", members[0].GrpcAddr, "-timeout", "700ms", "-json", "-insecure"}, &out, &errb)
	took := time.Since(start)
	if code != exitUnhealthy {
		t.Fatalf("exit %d, want %d\n%s%s", code, exitUnhealthy, out.String(), errb.String())
	}
	var v clusterJSON
	if err := json.Unmarshal([]byte(out.String()), &v); err != nil {
		t.Fatal(err)
	}
	health := []string{}
	for _, r := range v.Members {
		health = append(health, r.Health)
	}
	if !reflect.DeepEqual(health, []string{"ok", "ok", "unreachable"}) || v.MasterID != 1 || v.Members[2].Error == "" {
		t.Fatalf("health %q master %d\n%s", health, v.MasterID, out.String())
	}
	if took < 700*time.Millisecond || took > 2*time.Second {
		t.Fatalf("took %v with -timeout 700ms: want about one timeout", took)
	}
	t.Logf("hung member: exit %d after %v; its error: %s", code, took.Round(time.Millisecond), v.Members[2].Error)
}
