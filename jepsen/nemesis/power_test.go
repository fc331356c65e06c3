package nemesis

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"
)

type fakePower struct {
	fakeCluster
	cuts [][]uint32
}

func (f *fakePower) PowerCut(_ context.Context, ids []uint32) error {
	f.cuts = append(f.cuts, slices.Clone(ids))
	return f.log(fmt.Sprint("power ", ids))
}

func TestPowerOneMajorityAll(t *testing.T) {
	if got, err := ParseKinds("power,kill"); err != nil || !slices.Equal(got, []string{Kill, Power}) {
		t.Fatalf("parse: %v %v", got, err)
	}
	if all, _ := ParseKinds("all"); slices.Contains(all, Power) {
		t.Fatalf("power is opt-in, not in all: %v", all)
	}
	c := &fakePower{}
	n := New(c, nil, 7, time.Second)
	ctx := context.Background()
	// One node, a majority, all, one node twice (again while it restarts), one node.
	for i, size := range []int{1, 2, 3, 1, 1} {
		cutsBefore, callsBefore := len(c.cuts), len(c.calls)
		a, err := n.Inject(ctx, Power)
		if err != nil {
			t.Fatal(err)
		}
		cuts := c.cuts[cutsBefore:]
		if i == 3 {
			if len(cuts) != 2 || len(cuts[0]) != 1 || !slices.Equal(cuts[0], cuts[1]) {
				t.Fatalf("fault %d (%s): cuts %v, want one node cut twice", i, a.Desc, cuts)
			}
			if between := c.calls[callsBefore+1 : len(c.calls)-1]; len(between) != 1 || between[0] != fmt.Sprint("restart ", cuts[0][0]) {
				t.Fatalf("fault %d (%s): between the cuts %v, want the node's restart", i, a.Desc, between)
			}
		} else if len(cuts) != 1 || len(cuts[0]) != size {
			t.Fatalf("fault %d (%s): cuts %v, want %d nodes cut once", i, a.Desc, cuts, size)
		}
		before := len(c.calls)
		if err := a.Heal(ctx); err != nil {
			t.Fatal(err)
		}
		if restarts := len(c.calls) - before; restarts != size {
			t.Fatalf("heal restarted %d nodes, want %d: %v", restarts, size, c.calls[before:])
		}
		t.Log(a.Desc)
	}
	// A cluster whose disks cannot lose power refuses, saying why.
	if _, err := New(&fakeCluster{}, nil, 7, time.Second).Inject(ctx, Power); !errors.Is(err, ErrNoPowerCut) {
		t.Fatalf("plain cluster: %v", err)
	}
}
