package localcluster

import (
	"slices"
	"testing"
)

func TestBinlogdEnv(t *testing.T) {
	env := []string{"PATH=/bin", "HOME=/root"}
	got := binlogdEnv(env)
	if !slices.Contains(got, "GOMAXPROCS="+binlogdProcs) || len(got) != 3 {
		t.Fatalf("binlogdEnv(%q) = %q, want GOMAXPROCS=%s added", env, got, binlogdProcs)
	}
	if len(env) != 2 {
		t.Fatalf("binlogdEnv changed its argument: %q", env)
	}
	own := []string{"GOMAXPROCS=4", "PATH=/bin"}
	if got := binlogdEnv(own); !slices.Equal(got, own) {
		t.Fatalf("binlogdEnv(%q) = %q, want the caller's GOMAXPROCS kept", own, got)
	}
}
