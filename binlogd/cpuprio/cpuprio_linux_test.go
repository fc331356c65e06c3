package cpuprio

import (
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// statNice is the nice value in /proc/<path>/stat (field 19).
func statNice(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path + "/stat")
	if errors.Is(err, os.ErrNotExist) && strings.Contains(path, "/task/") {
		return math.MinInt // a thread that exited meanwhile
	}
	if err != nil {
		t.Fatal(err)
	}
	// The command (field 2) may hold spaces: count from its closing ')'.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	n, err := strconv.Atoi(f[16]) // field 19 is the 17th after the command
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func threadNices(t *testing.T) map[string]int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]int{}
	for _, e := range ents {
		if _, err := os.Stat("/proc/self/task/" + e.Name()); err != nil {
			continue // exited since the listing
		}
		if n := statNice(t, "/proc/self/task/"+e.Name()); n != math.MinInt {
			m[e.Name()] = n
		}
	}
	return m
}

// extraThreads parks n goroutines on OS threads of their own until the
// returned func is called, so the process has threads besides the
// runtime's few.
func extraThreads(n int) func() {
	var ready, stop sync.WaitGroup
	stop.Add(1)
	for i := 0; i < n; i++ {
		ready.Add(1)
		go func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			ready.Done()
			stop.Wait()
		}()
	}
	ready.Wait()
	return stop.Done
}

func TestSetNiceChangesEveryThread(t *testing.T) {
	release := extraThreads(4)
	defer release()
	have, err := Nice()
	if err != nil {
		t.Fatal(err)
	}
	want := have - 3
	privileged := want >= -20 && CanSet(want) == nil
	if !privileged {
		// Without CAP_SYS_NICE lowering fails with ErrPermission and
		// changes nothing; raising works.
		if have > -20 {
			if err := SetNice(have - 1); !errors.Is(err, ErrPermission) {
				t.Fatalf("lowering without privilege: err %v, want ErrPermission", err)
			}
			for tid, n := range threadNices(t) {
				if n != have {
					t.Fatalf("refused SetNice left thread %s at %d", tid, n)
				}
			}
		}
		want = min(have+3, 19)
	}
	defer func() {
		if err := SetNice(have); err != nil && privileged {
			t.Errorf("restore nice %d: %v", have, err)
		}
	}()
	if err := SetNice(want); err != nil {
		t.Fatal(err)
	}
	got := threadNices(t)
	if len(got) < 5 {
		t.Fatalf("only %d threads seen", len(got))
	}
	for tid, n := range got {
		if n != want {
			t.Errorf("thread %s at nice %d, want %d", tid, n, want)
		}
	}
	// A thread the runtime starts now inherits the value.
	release2 := extraThreads(2)
	defer release2()
	for tid, n := range threadNices(t) {
		if n != want {
			t.Errorf("thread %s (started after SetNice) at nice %d, want %d", tid, n, want)
		}
	}
}

func TestStartRunsChildAtItsNice(t *testing.T) {
	have, err := Nice()
	if err != nil {
		t.Fatal(err)
	}
	want := min(have+5, 19)
	cmd := exec.Command("sleep", "30")
	if err := Start(cmd, want); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	if got := statNice(t, "/proc/"+strconv.Itoa(cmd.Process.Pid)); got != want {
		t.Errorf("child at nice %d, want %d", got, want)
	}
	// The thread that forked it ends with its value (the runtime exits a
	// locked thread whose goroutine returned, right after Start returns).
	awaitThreadsAt(t, have)
}

// awaitThreadsAt waits until every thread of this process runs at nice
// have (a discarded forking thread may take a moment to exit).
func awaitThreadsAt(t *testing.T, have int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		left := ""
		for tid, n := range threadNices(t) {
			if n != have {
				left += fmt.Sprintf(" %s (nice %d)", tid, n)
			}
		}
		if left == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("threads left at another nice than %d:%s", have, left)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestStartBelowOwnNiceNeedsPrivilege(t *testing.T) {
	have, err := Nice()
	if err != nil || have == -20 {
		t.Skip("cannot go lower")
	}
	if CanSet(have-1) == nil {
		t.Skip("this process may lower nice values (CAP_SYS_NICE); the refusal needs one that may not")
	}
	cmd := exec.Command("sleep", "30")
	if err := Start(cmd, have-1); !errors.Is(err, ErrPermission) {
		t.Fatalf("err %v, want ErrPermission", err)
	}
	if cmd.Process != nil {
		t.Fatal("started despite the refusal")
	}
}

func TestOutOfRange(t *testing.T) {
	for _, n := range []int{-21, 20} {
		if err := SetNice(n); err == nil {
			t.Errorf("SetNice(%d) accepted", n)
		}
		if err := Start(exec.Command("true"), n); err == nil {
			t.Errorf("Start(%d) accepted", n)
		}
	}
}
