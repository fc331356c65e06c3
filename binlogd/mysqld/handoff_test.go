package mysqld

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"
)

// A running server is handed to a new handle only as the record names it:
// the same process (pid and start time), this instance's server, and
// read-only; a forged or stale record, or a server made writable, is
// refused; a server no record names is killed as a crash's leftover.
func TestHandoffAdoptAndRefuse(t *testing.T) {
	inst := NewTestInstance(t, 7)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db := inst.TestDB(t)

	if _, err := db.ExecContext(ctx, "SET GLOBAL read_only=OFF"); err != nil {
		t.Fatal(err)
	}
	if _, err := inst.Handoff(ctx, db); !errors.Is(err, ErrNotAdoptable) {
		t.Fatalf("handoff of a writable server: %v", err)
	}
	if _, err := db.ExecContext(ctx, "SET GLOBAL read_only=ON"); err != nil {
		t.Fatal(err)
	}
	h, err := inst.Handoff(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "handoff.json")
	if err := SaveHandoff(path, h); err != nil {
		t.Fatal(err)
	}
	got, ok, err := TakeHandoff(path)
	if err != nil || !ok || got.Pid != h.Pid || got.StartTicks != h.StartTicks {
		t.Fatalf("TakeHandoff: %+v %v %v, saved %+v", got, ok, err, h)
	}
	if _, ok, _ := TakeHandoff(path); ok {
		t.Fatal("a handoff record was used twice")
	}

	// A second handle stands for the next binlogd.
	next := func(serverID uint32) *Instance {
		i, err := New(Options{Dir: inst.opts.Dir, Port: inst.opts.Port, ServerID: serverID})
		if err != nil {
			t.Fatal(err)
		}
		return i
	}
	refused := func(what string, i *Instance, h Handoff) {
		t.Helper()
		if err := i.Adopt(ctx, h); !errors.Is(err, ErrNotAdoptable) {
			t.Fatalf("%s: adopted (%v)", what, err)
		}
		if i.Pid() != 0 {
			t.Fatalf("%s: refused but the handle runs pid %d", what, i.Pid())
		}
	}
	stale := h
	stale.StartTicks++ // the pid now names another process
	refused("a reused pid", next(7), stale)
	other := h
	other.Pid = 1
	refused("another process", next(7), other)
	refused("a record for another server id", next(8), h)
	if _, err := db.ExecContext(ctx, "SET GLOBAL read_only=OFF"); err != nil {
		t.Fatal(err)
	}
	refused("a server made writable meanwhile", next(7), h)
	if _, err := db.ExecContext(ctx, "SET GLOBAL read_only=ON"); err != nil {
		t.Fatal(err)
	}

	adopter := next(7)
	if err := adopter.Adopt(ctx, h); err != nil {
		t.Fatal(err)
	}
	if adopter.Pid() != h.Pid {
		t.Fatalf("adopted pid %d, want %d", adopter.Pid(), h.Pid)
	}

	// Without a record, the same server is a crash's leftover.
	killer := next(7)
	if killer.Orphan() != h.Pid {
		t.Fatalf("Orphan() = %d, want %d", killer.Orphan(), h.Pid)
	}
	pid, err := killer.KillOrphan(30 * time.Second)
	if err != nil || pid != h.Pid {
		t.Fatalf("KillOrphan: %d %v", pid, err)
	}
	if Alive(h.Pid) {
		t.Fatal("the orphan is still alive")
	}
	select {
	case <-adopter.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the adopting handle did not notice its server exit")
	}
}
