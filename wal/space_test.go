package wal

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// tmpfs mounts a tmpfs of size under the test's temp dir until it ends.
func tmpfs(t *testing.T, size string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounts a tmpfs: needs root")
	}
	dir := filepath.Join(t.TempDir(), "fs")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+size); err != nil {
		t.Skipf("cannot mount a tmpfs: %v", err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// fillFS writes a file in dir until the filesystem has less than left bytes
// available.
func fillFS(t *testing.T, dir string, left uint64) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 64<<10)
	for {
		var st syscall.Statfs_t
		if err := syscall.Statfs(dir, &st); err != nil {
			t.Fatal(err)
		}
		if st.Bavail*uint64(st.Bsize) < left {
			return path
		}
		if _, err := f.Write(chunk); err != nil {
			t.Fatal(err)
		}
	}
}

// TestDiskFullFailsCleanly: on a real (tmpfs) filesystem that fills up
// under the reserve, the next Save fails with ErrDiskFull and the Log is
// failed (every later call ErrFailed) instead of the process dying in a
// Badger write through a mapping; Open refuses while space is short; once
// it is freed, the log reopens with every acknowledged Save.
func TestDiskFullFailsCleanly(t *testing.T) {
	dir := tmpfs(t, "24m")
	opts := quietOptions()
	opts.MinFreeBytes = 6 << 20
	l := openTest(t, dir, opts)
	for i := uint64(1); i <= 50; i++ {
		p := Ballot{Round: i}
		mustSave(t, l, Update{Promised: &p, Accepted: []Accepted{acc(i, i)}})
	}
	filler := fillFS(t, dir, 5<<20)
	var err error
	acked := uint64(50)
	// Free space is checked at most once per MiB written or per second:
	// keep saving until the check has had its chance.
	until := time.Now().Add(10 * time.Second)
	for i := uint64(51); time.Now().Before(until) && err == nil; i++ {
		p := Ballot{Round: i}
		if err = l.Save(Update{Promised: &p, Accepted: []Accepted{acc(i, i)}}); err == nil {
			acked = i
		}
	}
	if !errors.Is(err, ErrDiskFull) || !errors.Is(err, ErrFailed) {
		t.Fatalf("Save on a full disk = %v, want ErrDiskFull and ErrFailed", err)
	}
	if err := l.Save(Update{Accepted: []Accepted{acc(acked+1, 1)}}); !errors.Is(err, ErrFailed) {
		t.Fatalf("Save after the failure = %v, want ErrFailed", err)
	}
	l.Close()
	if _, err := Open(dir, opts); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("Open on a full disk = %v, want ErrDiskFull", err)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	l = openTest(t, dir, opts)
	if hs := l.HardState(); hs.Promised.Round != acked || l.LastIndex() != acked {
		t.Fatalf("after freeing space: promised %d, last %d; want %d", hs.Promised.Round, l.LastIndex(), acked)
	}
}

// BenchmarkCheckSpace: what the free-space guard adds to each group
// written (a group's frame of 4 KiB; one statfs per MiB or second).
func BenchmarkCheckSpace(b *testing.B) {
	l := &Log{dir: b.TempDir(), opts: Options{MinFreeBytes: 1}}
	for b.Loop() {
		if err := l.checkSpace(4 << 10); err != nil {
			b.Fatal(err)
		}
	}
}
