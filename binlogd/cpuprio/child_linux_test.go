package cpuprio

import (
	"os/exec"
	"strconv"
	"testing"
)

// TestStartChildUsesChildNice: helper processes run at SetChildNice's
// value, not at this process's own; unset, they inherit it as any child
// does; a value this process may not lower to falls back to inheriting
// instead of failing the command.
func TestStartChildUsesChildNice(t *testing.T) {
	defer SetChildNice(noChild)
	have, err := Nice()
	if err != nil {
		t.Fatal(err)
	}
	run := func(name string, want int) {
		t.Helper()
		cmd := exec.Command("sleep", "30")
		if err := StartChild(cmd); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
		if got := statNice(t, "/proc/"+strconv.Itoa(cmd.Process.Pid)); got != want {
			t.Errorf("%s: child at nice %d, want %d", name, got, want)
		}
	}
	run("unset", have)
	if have < 19 {
		SetChildNice(have + 1)
		run("raised", have+1)
		// The forking thread was discarded: no thread of this process
		// stays at the child's value.
		awaitThreadsAt(t, have)
	}
	if have > -20 && CanSet(have-1) != nil { // unprivileged: lowering is refused
		SetChildNice(have - 1)
		run("refused", have)
	}

	// RunChild waits for the command and reports its exit.
	SetChildNice(min(have+1, 19))
	if err := RunChild(exec.Command("true")); err != nil {
		t.Errorf("RunChild(true): %v", err)
	}
	if err := RunChild(exec.Command("false")); err == nil {
		t.Error("RunChild(false): no error")
	}
}
