package wal

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// crashChild saves from 8 goroutines forever, printing each index once
// its Save returned; the parent kills it with SIGKILL.
func crashChild(dir string) {
	l, err := Open(dir, crashOptions())
	if err != nil {
		fmt.Println("open:", err)
		os.Exit(1)
	}
	var next, acked atomic.Uint64
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
				for a := acked.Load(); a < i && !acked.CompareAndSwap(a, i); a = acked.Load() {
				}
			}
		}()
	}
	// Truncate behind the saves, as log retention does, so segments are
	// collected while the saves go on; "T n" once FirstIndex n is durable.
	for {
		if a := acked.Load(); a > 1100 {
			if err := l.SaveApplied(a, nil); err != nil {
				fmt.Println("save applied:", err)
				os.Exit(1)
			}
			if err := l.TruncateBelow(a - 1000); err != nil {
				fmt.Println("truncate:", err)
				os.Exit(1)
			}
			out.Lock()
			fmt.Println("T", a-1000)
			out.Unlock()
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// crashOptions: small segments, so a run rotates and collects many.
func crashOptions() Options {
	o := quietOptions()
	o.SegmentBytes = 16 << 10
	return o
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
	var first uint64 // the highest truncation the child saw done
	for len(acked) < 3000 && sc.Scan() {
		if b, ok := strings.CutPrefix(sc.Text(), "T "); ok {
			if n, err := strconv.ParseUint(b, 10, 64); err == nil {
				first = max(first, n)
				continue
			}
		}
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
	if len(acked) < 3000 {
		t.Fatalf("child stopped after %d saves: %v", len(acked), sc.Err())
	}

	l := openTest(t, dir, crashOptions())
	hs := l.HardState()
	if hs.Chosen < maxAcked || hs.Promised.Round < maxAcked || hs.FirstIndex < first {
		t.Fatalf("HardState %+v below the highest acked save %d or truncation %d", hs, maxAcked, first)
	}
	if first == 0 {
		t.Fatal("the child never truncated")
	}
	for i := range acked {
		if i < hs.FirstIndex {
			continue
		}
		if a, ok, err := l.Get(i); err != nil || !ok || !equalAccepted(a, acc(i, i)) {
			t.Fatalf("acked instance %d after kill -9: %+v %v %v", i, a, ok, err)
		}
	}
	t.Logf("%d acked saves survived kill -9; first index %d (truncated below %d), LastIndex %d", len(acked), hs.FirstIndex, first, l.LastIndex())
}
