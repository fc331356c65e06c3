package wal

import (
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"unsafe"
)

// ringOrSkip returns a ring, or skips where the kernel refuses one (then
// the Log uses the system call, which every other test covers).
func ringOrSkip(t *testing.T) *uring {
	t.Helper()
	u, err := newURing()
	if err != nil {
		t.Skipf("no io_uring here: %v", err)
	}
	return u
}

// TestURingSyncs: syncs through the ring complete, many at once, each
// with its own result: a file descriptor that is not open fails its own
// sync with EBADF, not the ring and not the others.
func TestURingSyncs(t *testing.T) {
	if n := unsafe.Sizeof(ioURingParams{}); n != 120 {
		t.Fatalf("ioURingParams is %d bytes, want struct io_uring_params' 120", n)
	}
	u := ringOrSkip(t)
	defer u.close()
	dir := t.TempDir()
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f, err := os.Create(filepath.Join(dir, string(rune('a'+g))))
			if err != nil {
				errs <- err
				return
			}
			defer f.Close()
			for i := range 50 {
				if _, err := f.Write([]byte("frame")); err != nil {
					errs <- err
					return
				}
				if err := u.fdatasync(f); err != nil {
					errs <- err
					return
				}
				if i == 25 && g == 0 {
					closed, _ := os.Create(filepath.Join(dir, "closed"))
					closed.Close()
					if err := u.fdatasync(closed); !errors.Is(err, syscall.EBADF) || errors.Is(err, errRingBroken) {
						errs <- errors.New("sync of a closed file: want EBADF, got " + errString(err))
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func errString(err error) string {
	if err == nil {
		return "nil"
	}
	return err.Error()
}

// TestSyncerFallsBack: once the ring fails, the syncer syncs by system
// call, that sync included, and says so.
func TestSyncerFallsBack(t *testing.T) {
	s := newSyncer(false, false, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if !s.usesRing() {
		t.Skip("no io_uring here")
	}
	defer s.close()
	f, err := os.Create(filepath.Join(t.TempDir(), "seg"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := s.fdatasync(f); err != nil {
		t.Fatalf("sync through the ring: %v", err)
	}
	// Break the ring as a failed eventfd would: its reaper stops and
	// every later call fails with errRingBroken.
	s.owned.efd.Close()
	<-s.owned.reaped
	if err := s.owned.fdatasync(f); !errors.Is(err, errRingBroken) {
		t.Fatalf("broken ring's sync: %v, want errRingBroken", err)
	}
	if err := s.fdatasync(f); err != nil {
		t.Fatalf("sync after the ring broke: %v, want the system call's success", err)
	}
	if s.usesRing() {
		t.Fatal("the syncer still uses a broken ring")
	}
}

// TestLogSyncPaths: a Log opened with and without PlainSync uses the path
// asked for (the ring where the kernel has one), and its saves survive a
// reopen either way.
func TestLogSyncPaths(t *testing.T) {
	_, ringErr := newURing()
	for _, plain := range []bool{false, true} {
		dir := t.TempDir()
		opts := quietOptions()
		opts.PlainSync = plain
		l, err := Open(dir, opts)
		if err != nil {
			t.Fatal(err)
		}
		if want := !plain && ringErr == nil; l.syncer.usesRing() != want {
			t.Fatalf("PlainSync=%v: ring in use %v, want %v", plain, l.syncer.usesRing(), want)
		}
		for i := uint64(1); i <= 20; i++ {
			mustSave(t, l, Update{Accepted: []Accepted{acc(i, 1)}})
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		l = openTest(t, dir, opts)
		for i := uint64(1); i <= 20; i++ {
			a, ok, err := l.Get(i)
			if err != nil || !ok || !equalAccepted(a, acc(i, 1)) {
				t.Fatalf("PlainSync=%v: instance %d after reopen: %+v, %v, %v", plain, i, a, ok, err)
			}
		}
	}
}

// TestURingFailedEnterWithdrawsEntry: when io_uring_enter fails (here:
// the ring's descriptor replaced by a bad one for one call), the entry
// is taken back out of the ring and the ring is marked broken, so no
// later submission sends an fsync whose result nobody reads (it could
// consume the file's write error). Found by a reviewer (session 21).
func TestURingFailedEnterWithdrawsEntry(t *testing.T) {
	u := ringOrSkip(t)
	defer u.close()
	f, err := os.Create(filepath.Join(t.TempDir(), "seg"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	u.mu.Lock()
	good := u.fd
	u.fd = -1
	u.mu.Unlock()
	err = u.fdatasync(f)
	u.mu.Lock()
	u.fd = good
	left := atomic.LoadUint32(u.sqTail) - atomic.LoadUint32(u.sqHead)
	broken := u.broken
	u.mu.Unlock()
	if !errors.Is(err, errRingBroken) {
		t.Fatalf("failed enter: %v, want errRingBroken", err)
	}
	if left != 0 {
		t.Errorf("a failed submission left %d entries in the submission ring", left)
	}
	if broken == nil {
		t.Error("ring not marked broken after a failed enter")
	}
	if err := u.fdatasync(f); !errors.Is(err, errRingBroken) {
		t.Errorf("sync on a broken ring: %v, want errRingBroken", err)
	}
}

// TestURingCloseTwice: a second close releases nothing that is no
// longer the ring's (its descriptor number may be another file's).
func TestURingCloseTwice(t *testing.T) {
	u := ringOrSkip(t)
	ringFD := u.fd
	u.close()
	f, err := os.Create(filepath.Join(t.TempDir(), "victim"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if int(f.Fd()) != ringFD {
		t.Skipf("descriptor %d not reused (got %d)", ringFD, f.Fd())
	}
	u.close()
	if _, err := f.Write([]byte("x")); err != nil {
		t.Errorf("second close closed another file's descriptor: %v", err)
	}
}
