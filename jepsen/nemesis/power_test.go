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
	for i, size := range []int{1, 2, 3, 1} {
		a, err := n.Inject(ctx, Power)
		if err != nil {
			t.Fatal(err)
		}
		if got := len(c.cuts[i]); got != size {
			t.Fatalf("fault %d (%s): %d nodes cut, want %d", i, a.Desc, got, size)
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
