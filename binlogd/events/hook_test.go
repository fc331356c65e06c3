package events

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// hookBus makes a Bus whose hook reports each run on the returned channel.
func hookBus(t *testing.T, hc HookConfig) (*Bus, chan error) {
	t.Helper()
	b := New(Options{Node: 2, Hook: &hc})
	ran := make(chan error, 1000)
	b.hook.ran = func(_ Event, err error) { ran <- err }
	t.Cleanup(b.Close)
	return b, ran
}

func TestHookGetsTheEventAsJSONOnStdin(t *testing.T) {
	out := filepath.Join(t.TempDir(), "ev.json")
	b, ran := hookBus(t, HookConfig{Argv: []string{"/bin/sh", "-c", `cat > "$1"; echo "kind=$PHXGO_EVENT_KIND"`, "hook", out}})
	b.Publish(Event{Kind: Failover, Epoch: 7, Master: 2, Details: map[string]string{"previous": "1"}})
	if err := <-ran; err != nil {
		t.Fatalf("hook: %v", err)
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var ev Event
	if err := json.Unmarshal(raw, &ev); err != nil {
		t.Fatalf("hook stdin is not an event: %v: %q", err, raw)
	}
	if ev.Kind != Failover || ev.Epoch != 7 || ev.Master != 2 || ev.Node != 2 || ev.Seq != 1 || ev.Details["previous"] != "1" {
		t.Fatalf("hook saw %+v", ev)
	}
	if counterValue(t, b.hook.runs.WithLabelValues("ok")) != 1 {
		t.Fatal("ok run not counted")
	}
}

func TestFailingHookIsCountedAndTheNextStillRuns(t *testing.T) {
	b, ran := hookBus(t, HookConfig{Argv: []string{"/bin/sh", "-c", `echo broken >&2; exit 3`}})
	b.Publish(Event{Kind: Fence})
	b.Publish(Event{Kind: Fence})
	for i := 0; i < 2; i++ {
		var ee interface{ ExitCode() int }
		if err := <-ran; !errors.As(err, &ee) || ee.ExitCode() != 3 {
			t.Fatalf("run %d: err %v, want exit status 3", i, err)
		}
	}
	if got := counterValue(t, b.hook.runs.WithLabelValues("failed")); got != 2 {
		t.Fatalf("failed runs = %v", got)
	}
	// A missing program fails the same way, without panicking the runner.
	b2, ran2 := hookBus(t, HookConfig{Argv: []string{"/nonexistent/hook"}})
	b2.Publish(Event{Kind: Fence})
	if err := <-ran2; err == nil {
		t.Fatal("missing hook program ran")
	}
}

// A hook that hangs (here: a shell whose child sleeps and holds its
// output open) is killed at its timeout, with its children, and Publish
// meanwhile returns at once: events beyond the queue's bound are dropped
// and counted.
func TestHangingHookIsKilledAndNeverBlocksPublish(t *testing.T) {
	b, ran := hookBus(t, HookConfig{Argv: []string{"/bin/sh", "-c", `sleep 300 & wait`}, Timeout: 300 * time.Millisecond, Queue: 2})
	for i := 0; i < 20; i++ { // runner holds one, queue two, the rest dropped
		b.Publish(Event{Kind: Unsafe})
	}
	dropped := counterValue(t, b.hook.dropped)
	if dropped < 17 {
		t.Fatalf("dropped %v events, want >= 17 (one running, two queued)", dropped)
	}
	for i := 0; i < int(20-dropped); i++ {
		if err := <-ran; !errors.Is(err, errHookTimeout) {
			t.Fatalf("run %d: %v, want timeout", i, err)
		}
	}
	if got := counterValue(t, b.hook.runs.WithLabelValues("timeout")); got != 20-dropped {
		t.Fatalf("timeouts counted %v, want %v", got, 20-dropped)
	}
	if len(b.Recent()) != 20 {
		t.Fatal("events were lost from the ring")
	}
}

// A slow hook only delays later runs: they all run, in publish order.
func TestSlowHookRunsEventsInOrder(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "log")
	b, ran := hookBus(t, HookConfig{Argv: []string{"/bin/sh", "-c", `sleep 0.1; sed -n 's/.*"seq":\([0-9]*\).*/\1/p' >> "$1"`, "hook", log}})
	for i := 0; i < 4; i++ {
		b.Publish(Event{Kind: MembershipChange})
	}
	for i := 0; i < 4; i++ {
		if err := <-ran; err != nil {
			t.Fatal(err)
		}
	}
	raw, _ := os.ReadFile(log)
	if got := strings.Fields(string(raw)); strings.Join(got, ",") != "1,2,3,4" {
		t.Fatalf("hook ran seqs %v, want 1,2,3,4", got)
	}
}

func TestHookOutputIsBounded(t *testing.T) {
	var l limitedBuffer
	l.Write([]byte(strings.Repeat("x", maxHookOutput-1)))
	l.Write([]byte("yyyy"))
	if s := l.String(); !strings.HasSuffix(s, "xy …(cut)") || len(s) > maxHookOutput+16 {
		t.Fatalf("bounded output ends %q (len %d)", s[len(s)-12:], len(s))
	}
}
