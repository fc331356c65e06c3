package wal

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
)

// crashChild saves from 8 goroutines forever, printing each index once
// its Save returned; the parent kills it with SIGKILL.
func crashChild(dir string) {
	l, err := Open(dir, quietOptions())
	if err != nil {
		fmt.Println("open:", err)
		os.Exit(1)
	}
	var next atomic.Uint64
	var out sync.Mutex
	for range 8 {
		go func() {
			for {
				i := next.Add(1)
				p := Ballot{Round: i}
				if err := l.Save(Update{Promised: &p, Accepted: []Accepted{acc(i, i)}, Chosen: i}); err != nil {
					fmt.Println("save:", err)
					os.Exit(1)
				}
				out.Lock()
				fmt.Println(i) // stdout is unbuffered: one write per line
				out.Unlock()
			}
		}()
	}
	select {}
}

// TestKillNineKeepsAckedSaves: a process saving concurrently is killed
// with SIGKILL; after reopening, every Save it saw return is there and
// HardState covers them. (A process crash, not a power cut: the page
// cache survives. Power cuts: TestReplayRestoresWhatBadgerLost and
// TestTornTailIsCutOff.)
func TestKillNineKeepsAckedSaves(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+dir)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	acked := map[uint64]bool{}
	var maxAcked uint64
	sc := bufio.NewScanner(stdout)
	for len(acked) < 500 && sc.Scan() {
		i, err := strconv.ParseUint(sc.Text(), 10, 64)
		if err != nil {
			cmd.Process.Kill()
			t.Fatalf("child: %s", sc.Text())
		}
		acked[i] = true
		maxAcked = max(maxAcked, i)
	}
	cmd.Process.Kill() // SIGKILL
	cmd.Wait()
	if len(acked) < 500 {
		t.Fatalf("child stopped after %d saves: %v", len(acked), sc.Err())
	}

	l := openTest(t, dir, quietOptions())
	hs := l.HardState()
	if hs.Chosen < maxAcked || hs.Promised.Round < maxAcked {
		t.Fatalf("HardState %+v below the highest acked save %d", hs, maxAcked)
	}
	for i := range acked {
		if a, ok, err := l.Get(i); err != nil || !ok || !equalAccepted(a, acc(i, i)) {
			t.Fatalf("acked instance %d after kill -9: %+v %v %v", i, a, ok, err)
		}
	}
	t.Logf("%d acked saves survived kill -9; LastIndex %d", len(acked), l.LastIndex())
}
