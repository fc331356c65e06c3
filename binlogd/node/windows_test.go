package node

import (
	"context"
	"testing"
	"time"

	"phxgo/masterlease"
)

// endsTerm must hold back exactly the proposals that let another node
// serve early: a Fence, or a grant to another node (Switchover).
func TestEndsTerm(t *testing.T) {
	const self = 2
	for _, c := range []struct {
		name string
		cmd  []byte
		want bool
	}{
		{"fence own term", masterlease.EncodeFence(masterlease.Fence{Epoch: 7, From: self}), true},
		{"fence of another term (recovery)", masterlease.EncodeFence(masterlease.Fence{Epoch: 7, From: 3}), true},
		{"switchover grant", masterlease.EncodeLeaseRequest(masterlease.LeaseRequest{Candidate: 3, SeenVersion: 9}), true},
		{"own election", masterlease.EncodeLeaseRequest(masterlease.LeaseRequest{Candidate: self, SeenVersion: 9}), false},
		{"own renewal", masterlease.EncodeLeaseRequest(masterlease.LeaseRequest{Candidate: self, SeenVersion: 9, Renew: true}), false},
		{"noop", masterlease.EncodeNoop(), false},
		{"batch", masterlease.EncodeBatch(masterlease.Batch{Epoch: 7, Events: make([]byte, 4096), TxnCount: 1}), false},
		{"garbage", []byte{0xff, 0xff, 0xff}, false},
	} {
		if got := endsTerm(c.cmd, self); got != c.want {
			t.Errorf("%s: endsTerm = %v, want %v", c.name, got, c.want)
		}
	}
}

// A window is never longer than the cap nor than the lease left, and the
// step-down wait covers the latest one granted.
func TestReadWindowsArithmetic(t *testing.T) {
	var w readWindows
	now := time.Now()
	if got := w.grantLocked(now, now.Add(4*time.Second), time.Second); got != time.Second {
		t.Fatalf("window %v, want the 1s cap", got)
	}
	if got := w.grantLocked(now, now.Add(300*time.Millisecond), time.Second); got != 300*time.Millisecond {
		t.Fatalf("window %v, want the 300ms of lease left", got)
	}
	if want := now.Add(time.Second); !w.end.Equal(want) {
		t.Fatalf("latest end %v, want %v (a shorter later grant must not shorten it)", w.end, want)
	}

	w2 := readWindows{}
	w2.grantLocked(time.Now(), time.Now().Add(time.Hour), 80*time.Millisecond)
	start := time.Now()
	if _, err := w2.waitOut(context.Background()); err != nil {
		t.Fatal(err)
	}
	if time.Since(start) < 70*time.Millisecond {
		t.Fatalf("waitOut returned after %v, before the window ended", time.Since(start))
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	w2.grantLocked(time.Now(), time.Now().Add(time.Hour), time.Minute)
	if _, err := w2.waitOut(ctx); err == nil {
		t.Fatal("waitOut with a canceled context returned nil: the Fence would be proposed while a window runs")
	}
}
