package ratelog

import (
	"testing"
	"time"
)

func TestLimiter(t *testing.T) {
	l := Limiter{Every: time.Second}
	t0 := time.Unix(1000, 0)
	if ok, held := l.Allow(t0); !ok || held != 0 {
		t.Fatalf("first: %v %d", ok, held)
	}
	for i := range 3 {
		if ok, _ := l.Allow(t0.Add(time.Duration(i+1) * 100 * time.Millisecond)); ok {
			t.Fatal("allowed within the interval")
		}
	}
	if ok, held := l.Allow(t0.Add(time.Second)); !ok || held != 3 {
		t.Fatalf("after the interval: %v, held %d, want true, 3", ok, held)
	}
}

func TestCut(t *testing.T) {
	if got := Cut("abcdef", 3); got != "abc..." {
		t.Fatalf("Cut = %q", got)
	}
	if got := Cut("abc", 3); got != "abc" {
		t.Fatalf("Cut = %q", got)
	}
}
