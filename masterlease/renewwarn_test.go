package masterlease

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// TestFailedRenewalWarns: a master whose renewal is not chosen says so
// at WARN with the lease it has left (in a bench on a saturated host a
// master lost its lease with nothing logged but the step-down); a
// candidate's failed attempt stays at DEBUG.
func TestFailedRenewalWarns(t *testing.T) {
	cfg := DefaultConfig()
	s, clk, ls := cluster(t, cfg, 3)
	a, b := ls[0], ls[1]
	var logA, logB bytes.Buffer
	a.log = slog.New(slog.NewTextHandler(&logA, &slog.HandlerOptions{Level: slog.LevelDebug}))
	b.log = slog.New(slog.NewTextHandler(&logB, nil))
	if !step(a, nil) || a.Deadline().IsZero() {
		t.Fatal("node 1 did not acquire the lease")
	}
	s.setCut(1, true)
	clk.Advance(cfg.RenewInterval)
	if !step(a, nil) {
		t.Fatal("no renewal proposed at RenewInterval")
	}
	got := logA.String()
	if !strings.Contains(got, "level=WARN") || !strings.Contains(got, "renew=true") || !strings.Contains(got, "lease_left=") ||
		strings.Contains(got, "lease_left=0s") {
		t.Fatalf("failed renewal logged %q, want a WARN with renew=true and the lease left", got)
	}
	// A candidate's failed attempt: node 2 cut off after the lease lapsed
	// in its view.
	s.setCut(1, false)
	s.setCut(2, true)
	clk.Advance(2 * cfg.LeaseDuration)
	if !step(b, nil) {
		t.Fatal("node 2 did not try to acquire an expired lease")
	}
	if strings.Contains(logB.String(), "WARN") {
		t.Fatalf("a candidate's failed attempt warned: %q", logB.String())
	}
}
