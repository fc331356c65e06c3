package events

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"phxgo/binlogd/cpuprio"
)

// TestHookRunsAtChildNice: a hook runs at the helpers' nice value
// (mysql_nice), not at binlogd's own raised one.
func TestHookRunsAtChildNice(t *testing.T) {
	have, err := cpuprio.Nice()
	if err != nil {
		t.Skip(err)
	}
	if have >= 19 {
		t.Skipf("this process runs at nice %d: no higher value to give a hook", have)
	}
	want := have + 3
	if want > 19 {
		want = 19
	}
	cpuprio.SetChildNice(want)
	defer cpuprio.SetChildNice(have) // as unset: a child inherits have

	out := filepath.Join(t.TempDir(), "nice")
	// Field 19 of /proc/<pid>/stat is the nice value (the shell's own:
	// its command has no spaces).
	b, ran := hookBus(t, HookConfig{Argv: []string{"/bin/sh", "-c", `cut -d' ' -f19 /proc/$$/stat > "$1"`, "hook", out}})
	b.Publish(Event{Kind: Failover, Epoch: 1, Master: 2})
	if err := <-ran; err != nil {
		t.Fatalf("hook: %v", err)
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	got, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil || got != want {
		t.Fatalf("hook ran at nice %q, want %d (binlogd at %d)", raw, want, have)
	}
}
