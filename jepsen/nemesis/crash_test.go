package nemesis

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestKillMajorityAlternatesAndRestartsEveryVictim(t *testing.T) {
	c := &fakeCluster{}
	n := New(c, nil, 7, time.Second)
	ctx := context.Background()
	for i, want := range []int{2, 3, 2} { // majority of 3, all 3, majority again
		c.calls = nil
		a, err := n.Inject(ctx, KillMajority)
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Heal(ctx); err != nil {
			t.Fatal(err)
		}
		var killed, restarted []string
		for _, s := range c.calls {
			if id, ok := strings.CutPrefix(s, "killnode "); ok {
				killed = append(killed, id)
			}
			if id, ok := strings.CutPrefix(s, "restart "); ok {
				restarted = append(restarted, id)
			}
		}
		slices.Sort(killed)
		slices.Sort(restarted)
		if len(killed) != want || !slices.Equal(killed, restarted) || len(slices.Compact(slices.Clone(killed))) != want {
			t.Fatalf("fault %d (%s): killed %v restarted %v, want %d distinct nodes both", i, a.Desc, killed, restarted, want)
		}
	}
}

func TestLogdKillsOnlyTheMastersBinlogd(t *testing.T) {
	c := &fakeCluster{}
	n := New(c, nil, 1, time.Second)
	a, err := n.Inject(context.Background(), Logd)
	if err != nil {
		t.Fatal(err)
	}
	if a.MinHold < 2*time.Second {
		t.Fatalf("held %s, want at least two leases so another node takes over", a.MinHold)
	}
	if err := a.Heal(context.Background()); err != nil {
		t.Fatal(err)
	}
	if want := []string{"killbinlogd 2", "restart 2"}; !slices.Equal(c.calls, want) {
		t.Fatalf("calls %v, want %v (the master is n2)", c.calls, want)
	}
}

func TestParseKindsKnowsCrashKinds(t *testing.T) {
	got, err := ParseKinds("logd,kill-majority")
	if err != nil || !slices.Equal(got, []string{KillMajority, Logd}) {
		t.Fatalf("got %v %v", got, err)
	}
}
