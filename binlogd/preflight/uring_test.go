package preflight

import (
	"strings"
	"testing"

	"phxgo/wal"
)

// TestCheckIOURing: with the ring asked for, the check says whether this
// kernel gives one (ok) or not (warn, with the way to allow it); with
// wal_io_uring false it only says so.
func TestCheckIOURing(t *testing.T) {
	r := checkIOURing(true)
	if err := wal.CheckIOURing(); err == nil {
		if r.Status != OK || !strings.Contains(r.Finding, "through io_uring") {
			t.Fatalf("ring available: %+v", r)
		}
	} else if r.Status != Warn || !strings.Contains(r.Fix, "io_uring_disabled") {
		t.Fatalf("ring unavailable (%v): %+v", err, r)
	}
	if r := checkIOURing(false); r.Status != OK || !strings.Contains(r.Finding, "wal_io_uring is false") {
		t.Fatalf("wal_io_uring false: %+v", r)
	}
}
