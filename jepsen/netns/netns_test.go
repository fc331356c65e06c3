package netns

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"testing"
	"time"
)

// echo serves l, echoing lines back, until l is closed.
func echo(l net.Listener) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			r := bufio.NewReader(c)
			for {
				line, err := r.ReadString('\n')
				if err != nil {
					return
				}
				if _, err := c.Write([]byte(line)); err != nil {
					return
				}
			}
		}()
	}
}

// roundTrip dials addr from local (inside ns) and echoes one line, all
// within a short timeout. It proves or disproves connectivity.
func roundTrip(ctx context.Context, ns *NS, local, addr string) error {
	ctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	c, err := ns.DialFrom(ctx, local, "tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	dl, _ := ctx.Deadline()
	_ = c.SetDeadline(dl)
	if _, err := fmt.Fprintf(c, "ping\n"); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if line != "ping\n" {
		return fmt.Errorf("echo returned %q", line)
	}
	return nil
}

// await polls cond until it returns nil or the deadline passes.
func await(t *testing.T, what string, d time.Duration, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not reached within %s: %v", what, d, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestNamespacePartition(t *testing.T) {
	if err := Supported(); err != nil {
		t.Skipf("skipping: %v (CI runs as root with iproute2)", err)
	}
	ctx := context.Background()
	if err := EnsureIPTables(ctx); err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("phxnstest-%d", os.Getpid())
	ns, err := Create(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()

	// The namespace is private: nothing listens there, and the host's
	// 127.0.0.2 is not the namespace's.
	l2, err := ns.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	l3, err := ns.Listen("tcp", "127.0.0.3:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l3.Close()
	go echo(l2)
	go echo(l3)
	a2, a3 := l2.Addr().String(), l3.Addr().String()
	if c, err := net.DialTimeout("tcp", a3, 200*time.Millisecond); err == nil {
		c.Close()
		t.Fatalf("dialed %s from the root namespace: listener leaked out of the namespace", a3)
	}

	if err := roundTrip(ctx, ns, "127.0.0.2", a3); err != nil {
		t.Fatalf("2->3 before partition: %v", err)
	}
	if err := roundTrip(ctx, ns, "127.0.0.3", a2); err != nil {
		t.Fatalf("3->2 before partition: %v", err)
	}
	// An established connection, to see it cut too.
	est, err := ns.DialFrom(ctx, "127.0.0.2", "tcp", a3)
	if err != nil {
		t.Fatal(err)
	}
	defer est.Close()

	if err := ns.CutLinks(ctx, []Link{{"127.0.0.2", "127.0.0.3"}}); err != nil {
		t.Fatal(err)
	}
	rules, _ := ns.Rules(ctx)
	t.Logf("rules:\n%s", rules)
	await(t, "2->3 cut", 5*time.Second, func() error {
		if err := roundTrip(ctx, ns, "127.0.0.2", a3); err == nil {
			return errors.New("still connected")
		}
		return nil
	})
	if err := roundTrip(ctx, ns, "127.0.0.3", a2); err == nil {
		t.Fatal("3->2 still connected after the cut")
	}
	_ = est.SetDeadline(time.Now().Add(500 * time.Millisecond))
	fmt.Fprintf(est, "ping\n")
	if _, err := bufio.NewReader(est).ReadString('\n'); err == nil {
		t.Fatal("established connection still delivers after the cut")
	}
	// The harness's address is never cut.
	if err := roundTrip(ctx, ns, "127.0.0.1", a3); err != nil {
		t.Fatalf("client 127.0.0.1 -> 3 during partition: %v", err)
	}

	if err := ns.Heal(ctx); err != nil {
		t.Fatal(err)
	}
	await(t, "2->3 restored", 5*time.Second, func() error { return roundTrip(ctx, ns, "127.0.0.2", a3) })
	await(t, "3->2 restored", 5*time.Second, func() error { return roundTrip(ctx, ns, "127.0.0.3", a2) })

	// A process started in the namespace sees it; Close kills it.
	cmd := ns.Command(ctx, "sleep", "300")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	await(t, "sleep inside namespace", 5*time.Second, func() error {
		pids, err := Pids(ctx, name)
		if err != nil {
			return err
		}
		if !slices.Contains(pids, cmd.Process.Pid) {
			return fmt.Errorf("pid %d not in %v", cmd.Process.Pid, pids)
		}
		return nil
	})

	if err := ns.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-waited:
	case <-time.After(10 * time.Second):
		t.Fatal("process in the namespace survived Close")
	}
	names, err := List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(names, name) {
		t.Fatalf("namespace %s still listed after Close", name)
	}
}

func TestRemoveStale(t *testing.T) {
	if err := Supported(); err != nil {
		t.Skipf("skipping: %v", err)
	}
	ctx := context.Background()
	// A pid that is certainly dead: a finished child.
	p, err := os.StartProcess("/bin/true", []string{"true"}, &os.ProcAttr{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	dead := p.Pid
	prefix := fmt.Sprintf("phxstaletest%d-", os.Getpid())
	staleName := fmt.Sprintf("%s%d", prefix, dead)
	liveName := fmt.Sprintf("%s%d", prefix, os.Getpid())
	for _, n := range []string{staleName, liveName} {
		ns, err := Create(ctx, n)
		if err != nil {
			t.Fatal(err)
		}
		defer ns.Close()
	}
	removed, err := RemoveStale(ctx, prefix)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(removed, []string{staleName}) {
		t.Fatalf("removed %v, want only %s", removed, staleName)
	}
}
