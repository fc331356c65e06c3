package nemesis

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"phxgo/jepsen/cluster"
	"phxgo/jepsen/history"
	"phxgo/jepsen/netns"
)

func TestParseKinds(t *testing.T) {
	got, err := ParseKinds("pause, kill,kill")
	if err != nil || !slices.Equal(got, []string{Kill, Pause}) {
		t.Fatalf("got %v %v", got, err)
	}
	got, err = ParseKinds("all")
	if err != nil || len(got) != len(Kinds) {
		t.Fatalf("all: %v %v", got, err)
	}
	if got, err := ParseKinds("none"); err != nil || len(got) != 0 {
		t.Fatalf("none: %v %v", got, err)
	}
	if _, err := ParseKinds("kill,flood"); !errors.Is(err, ErrUnknownKind) {
		t.Fatalf("flood: %v", err)
	}
}

// sees returns, per node, the nodes it still reaches (itself included).
func sees(ids []uint32, cut [][2]uint32) map[uint32][]uint32 {
	out := map[uint32][]uint32{}
	for _, a := range ids {
		for _, b := range ids {
			if a == b || !slices.Contains(cut, pair(a, b)) {
				out[a] = append(out[a], b)
			}
		}
	}
	return out
}

func TestMajorityRing(t *testing.T) {
	for n := 4; n <= 9; n++ {
		ids := make([]uint32, n)
		for i := range ids {
			ids[i] = uint32(i + 1)
		}
		cut := majorityRing(ids)
		if len(cut) == 0 {
			t.Fatalf("n=%d: nothing cut", n)
		}
		views := map[string]bool{}
		for id, s := range sees(ids, cut) {
			if len(s) < n/2+1 {
				t.Fatalf("n=%d: node %d sees %v, not a majority", n, id, s)
			}
			views[fmt.Sprint(s)] = true
		}
		if len(views) != n {
			t.Fatalf("n=%d: %d distinct views, want every node's different", n, len(views))
		}
	}
	if cut := majorityRing([]uint32{1, 2, 3}); len(cut) != 0 {
		t.Fatalf("n=3 cut %v", cut)
	}
}

func TestIsolateAndHalves(t *testing.T) {
	ids := []uint32{1, 2, 3, 4, 5}
	s := sees(ids, isolate(ids, 3))
	if !slices.Equal(s[3], []uint32{3}) || len(s[1]) != 4 {
		t.Fatalf("isolate: %v", s)
	}
	s = sees(ids, bridgeless([]uint32{1, 4}, []uint32{2, 3, 5}))
	if !slices.Equal(s[4], []uint32{1, 4}) || !slices.Equal(s[5], []uint32{2, 3, 5}) {
		t.Fatalf("halves: %v", s)
	}
}

// fakeCluster records calls; it is a test double for the pure logic only.
type fakeCluster struct {
	mu    sync.Mutex
	calls []string
}

func (f *fakeCluster) log(s string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, s)
	return nil
}
func (f *fakeCluster) Nodes() []cluster.Node {
	return []cluster.Node{{ID: 1, Host: "127.0.0.2"}, {ID: 2, Host: "127.0.0.3"}, {ID: 3, Host: "127.0.0.4"}}
}
func (f *fakeCluster) Pids(uint32) (int, int, int) { return 1, 2, 3 }
func (f *fakeCluster) KillMysqld(id uint32) error  { return f.log(fmt.Sprint("killmysqld ", id)) }
func (f *fakeCluster) KillBinlogd(id uint32) error { return f.log(fmt.Sprint("killbinlogd ", id)) }
func (f *fakeCluster) KillNode(id uint32) error    { return f.log(fmt.Sprint("killnode ", id)) }
func (f *fakeCluster) Restart(_ context.Context, id uint32) error {
	return f.log(fmt.Sprint("restart ", id))
}
func (f *fakeCluster) Pause(id uint32, whole bool) error {
	return f.log(fmt.Sprint("pause ", id, whole))
}
func (f *fakeCluster) Resume(id uint32) error                 { return f.log(fmt.Sprint("resume ", id)) }
func (f *fakeCluster) Master(context.Context) (uint32, error) { return 2, nil }
func (f *fakeCluster) WaitHealthy(context.Context) error      { return f.log("healthy") }
func (f *fakeCluster) Stop() error                            { return nil }

type fakePart struct {
	fakeCluster
	links [][]netns.Link
}

func (p *fakePart) CutLinks(_ context.Context, l []netns.Link) error {
	p.links = append(p.links, l)
	return p.log(fmt.Sprint("cut ", l))
}
func (p *fakePart) Heal(context.Context) error { return p.log("heal") }

func TestScheduleDeterministicAndHeals(t *testing.T) {
	count := func(calls []string, prefix string) int {
		n := 0
		for _, c := range calls {
			if len(c) >= len(prefix) && c[:len(prefix)] == prefix {
				n++
			}
		}
		return n
	}
	run := func() ([]string, []history.Op) {
		c, p := &fakeCluster{}, &fakePart{}
		n := New(c, p, 42, 10*time.Millisecond)
		rec := history.NewRecorder(nil)
		ctx, cancel := context.WithCancel(context.Background())
		s := Schedule{Kinds: Kinds, Quiet: time.Millisecond, HoldMin: time.Millisecond, HoldMax: 2 * time.Millisecond, HealTO: time.Second}
		done := make(chan struct{})
		go func() { n.Run(ctx, s, rec); close(done) }()
		deadline := time.Now().Add(30 * time.Second)
		for len(rec.Ops()) < 12 && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		cancel()
		<-done
		// Every fault was healed: kills restarted, pauses resumed, cuts flushed.
		if k, r := count(c.calls, "kill"), count(c.calls, "restart"); k != r {
			t.Errorf("%d kills, %d restarts: %v", k, r, c.calls)
		}
		if ps, r := count(c.calls, "pause"), count(c.calls, "resume"); ps != r {
			t.Errorf("%d pauses, %d resumes: %v", ps, r, c.calls)
		}
		if cu, h := count(p.calls, "cut"), count(p.calls, "heal"); cu != h || cu == 0 {
			t.Errorf("%d cuts, %d heals: %v", cu, h, p.calls)
		}
		ops := rec.Ops()[:12]
		var descs []string
		for _, op := range ops {
			descs = append(descs, op.Note)
		}
		return descs, ops
	}
	a, ops := run()
	b, _ := run()
	if !slices.Equal(a, b) {
		t.Fatalf("same seed, different schedules:\n%v\n%v", a, b)
	}
	for _, op := range ops {
		if op.Outcome != history.OK || op.Complete < op.Invoke || op.F != history.FNemesis {
			t.Fatalf("bad window %+v", op)
		}
	}
	t.Logf("schedule: %q", a)
}
