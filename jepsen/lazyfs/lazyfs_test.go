package lazyfs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestMain lets this test binary be the mounts' server (Options.Server
// defaults to this executable with "lazyfs-serve"), so every test here
// runs against an out-of-process server as the harness does.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "lazyfs-serve" {
		os.Exit(ServeMain(os.Args[2:]))
	}
	os.Exit(m.Run())
}

// mountT mounts a fresh lazy filesystem and unmounts it when the test
// ends, failed or not; no mount or server process is left behind.
func mountT(t *testing.T, o Options) *FS {
	t.Helper()
	if err := Supported(); err != nil {
		t.Skipf("skipping: %v (these tests need root and /dev/fuse)", err)
	}
	dir := t.TempDir()
	mnt, back := filepath.Join(dir, "mnt"), filepath.Join(dir, "back")
	for _, d := range []string{mnt, back} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	f, err := Mount(mnt, back, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := f.Unmount(); err != nil {
			t.Errorf("unmount: %v", err)
		}
		if mounted(mnt) {
			t.Errorf("%s still mounted", mnt)
		}
		select {
		case <-f.exited:
		default:
			t.Errorf("server %d still running", f.ServerPid())
		}
	})
	return f
}

func stats(t *testing.T, f *FS) Stats {
	t.Helper()
	st, err := f.Stats()
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func (f *FS) p(name string) string { return filepath.Join(f.Mountpoint(), name) }

// write creates or opens name, writes data at off and fsyncs if asked.
func write(t *testing.T, path string, off int64, data string, fsync bool) {
	t.Helper()
	fh, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	if _, err := fh.WriteAt([]byte(data), off); err != nil {
		t.Fatal(err)
	}
	if fsync {
		if err := fh.Sync(); err != nil {
			t.Fatal(err)
		}
	}
}

func syncDir(t *testing.T, dir string) {
	t.Helper()
	d, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
}

// durable writes name fully synced (data and directory entry).
func durable(t *testing.T, f *FS, name, data string) {
	t.Helper()
	write(t, f.p(name), 0, data, true)
	syncDir(t, filepath.Dir(f.p(name)))
}

func drop(t *testing.T, f *FS) Dropped {
	t.Helper()
	d, err := f.DropUnsynced()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("dropped %+v", d)
	return d
}

func content(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return "<absent>"
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func want(t *testing.T, path, exp string) {
	t.Helper()
	if got := content(t, path); got != exp {
		if len(got) > 80 || len(exp) > 80 {
			t.Fatalf("%s: got %d bytes, want %d (equal: %v)", filepath.Base(path), len(got), len(exp), got == exp)
		}
		t.Fatalf("%s: got %q, want %q", filepath.Base(path), got, exp)
	}
}

func TestUnsyncedWriteIsGoneSyncedSurvives(t *testing.T) {
	f := mountT(t, Options{})
	durable(t, f, "a", "hello")
	write(t, f.p("a"), 0, "HELLO, more", false)              // overwrite and extend, not synced
	write(t, f.p("b"), 0, "never synced", false)             // new file, nothing synced
	write(t, f.p("c"), 0, strings.Repeat("x", 70000), false) // spans pages
	if st := stats(t, f); st.Files < 1 || st.Dirs != 1 {
		t.Fatalf("stats %+v", st)
	}
	want(t, f.p("a"), "HELLO, more") // readers see it until the power goes
	d := drop(t, f)
	want(t, f.p("a"), "hello")
	want(t, f.p("b"), "<absent>")
	want(t, f.p("c"), "<absent>")
	want(t, filepath.Join(f.Backing(), "a"), "hello") // the backing dir holds exactly the durable state
	if d.Files == 0 || d.Moved != 2 {
		t.Fatalf("dropped %+v", d)
	}
	if st := stats(t, f); st != (Stats{}) {
		t.Fatalf("after a drop nothing is unsynced: %+v", st)
	}
	// Synced data survives a second power loss, after a write in the middle of a page.
	write(t, f.p("a"), 2, "LL", true)
	write(t, f.p("a"), 4, "!", false)
	drop(t, f)
	want(t, f.p("a"), "heLLo")
}

func TestNewFileNeedsDirectoryFsync(t *testing.T) {
	f := mountT(t, Options{})
	write(t, f.p("lost"), 0, "data synced, entry not", true)
	drop(t, f)
	want(t, f.p("lost"), "<absent>")

	write(t, f.p("kept"), 0, "data and entry synced", true)
	syncDir(t, f.Mountpoint())
	drop(t, f)
	want(t, f.p("kept"), "data and entry synced")

	// The entry alone, without the file's data: an empty file survives.
	write(t, f.p("empty"), 0, "data not synced", false)
	syncDir(t, f.Mountpoint())
	drop(t, f)
	want(t, f.p("empty"), "")

	// In a new subdirectory both the subdirectory's entry and the file's
	// need their directory synced.
	if err := os.Mkdir(f.p("sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, f.p("sub/x"), 0, "x", true)
	syncDir(t, f.p("sub"))
	drop(t, f)
	want(t, f.p("sub"), "<absent>")
	if err := os.Mkdir(f.p("sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	syncDir(t, f.Mountpoint())
	write(t, f.p("sub/x"), 0, "x", true)
	syncDir(t, f.p("sub"))
	drop(t, f)
	want(t, f.p("sub/x"), "x")
}

func TestFsyncPersistsNameOption(t *testing.T) {
	f := mountT(t, Options{FsyncPersistsName: true})
	write(t, f.p("a"), 0, "synced file, directory not", true)
	write(t, f.p("b"), 0, "nothing synced", false)
	// In a new directory: the directory's name is made durable with it.
	if err := os.MkdirAll(f.p("d1/d2"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, f.p("d1/d2/c"), 0, "deep", true)
	write(t, f.p("d1/other"), 0, "not synced", false)
	drop(t, f)
	want(t, f.p("a"), "synced file, directory not")
	want(t, f.p("b"), "<absent>")
	want(t, f.p("d1/d2/c"), "deep")
	want(t, f.p("d1/other"), "<absent>")
}

func TestRename(t *testing.T) {
	f := mountT(t, Options{})
	durable(t, f, "conf", "old")
	// The usual atomic replace: write a temporary file, fsync it, rename.
	write(t, f.p("conf.tmp"), 0, "new", true)
	if err := os.Rename(f.p("conf.tmp"), f.p("conf")); err != nil {
		t.Fatal(err)
	}
	want(t, f.p("conf"), "new")
	drop(t, f) // the directory was not synced: the rename is lost
	want(t, f.p("conf"), "old")
	want(t, f.p("conf.tmp"), "<absent>")

	write(t, f.p("conf.tmp"), 0, "new", true)
	if err := os.Rename(f.p("conf.tmp"), f.p("conf")); err != nil {
		t.Fatal(err)
	}
	syncDir(t, f.Mountpoint())
	drop(t, f)
	want(t, f.p("conf"), "new")
	want(t, f.p("conf.tmp"), "<absent>")

	// A durable file moved to another directory, only the target synced:
	// it is then in both (each directory's listing is durable on its own).
	if err := os.Mkdir(f.p("d"), 0o755); err != nil {
		t.Fatal(err)
	}
	syncDir(t, f.Mountpoint())
	if err := os.Rename(f.p("conf"), f.p("d/conf")); err != nil {
		t.Fatal(err)
	}
	syncDir(t, f.p("d"))
	drop(t, f)
	want(t, f.p("d/conf"), "new")
	want(t, f.p("conf"), "new")
}

func TestUnlinkAndRmdir(t *testing.T) {
	f := mountT(t, Options{})
	if err := os.Mkdir(f.p("d"), 0o755); err != nil {
		t.Fatal(err)
	}
	syncDir(t, f.Mountpoint())
	durable(t, f, "d/f", "keep me")
	if err := os.Remove(f.p("d/f")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(f.p("d")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(f.p("missing")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("remove of a missing file: %v", err)
	}
	drop(t, f)
	want(t, f.p("d/f"), "keep me")

	if err := os.Remove(f.p("d/f")); err != nil {
		t.Fatal(err)
	}
	syncDir(t, f.p("d"))
	drop(t, f)
	want(t, f.p("d/f"), "<absent>")
	want(t, filepath.Join(f.Backing(), "d/f"), "<absent>")
	if ents, _ := os.ReadDir(f.o.TrashDir); len(ents) != 0 {
		t.Fatalf("trash not emptied: %v", ents)
	}
}

func TestTruncateAndAppend(t *testing.T) {
	f := mountT(t, Options{})
	long := strings.Repeat("0123456789", 1000)
	durable(t, f, "t", long)
	if err := os.Truncate(f.p("t"), 100); err != nil {
		t.Fatal(err)
	}
	drop(t, f)
	want(t, f.p("t"), long)

	fh, err := os.OpenFile(f.p("t"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := fh.Truncate(100); err != nil {
		t.Fatal(err)
	}
	if err := fh.Sync(); err != nil {
		t.Fatal(err)
	}
	fh.Close()
	drop(t, f)
	want(t, f.p("t"), long[:100])

	// O_TRUNC on open, not synced.
	fh, err = os.OpenFile(f.p("t"), os.O_RDWR|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	fh.Close()
	drop(t, f)
	want(t, f.p("t"), long[:100])

	// Append after sync: what was appended before the fsync survives.
	durable(t, f, "log", "hello")
	ap, err := os.OpenFile(f.p("log"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{" world", "!!"} {
		if _, err := ap.WriteString(s); err != nil {
			t.Fatal(err)
		}
		if s == " world" {
			if err := ap.Sync(); err != nil {
				t.Fatal(err)
			}
		}
	}
	ap.Close()
	want(t, f.p("log"), "hello world!!")
	drop(t, f)
	want(t, f.p("log"), "hello world")
}

func TestSyncWritesAreDurableAtOnce(t *testing.T) {
	f := mountT(t, Options{})
	durable(t, f, "s", "aaaaaaaa")
	write(t, f.p("s"), 0, "bb", false) // buffered: lost
	fh, err := os.OpenFile(f.p("s"), os.O_RDWR|unix.O_DSYNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fh.WriteAt([]byte("CC"), 4); err != nil {
		t.Fatal(err)
	}
	if _, err := fh.WriteAt([]byte("DD"), 10); err != nil { // beyond the end: the gap is zeros
		t.Fatal(err)
	}
	fh.Close()
	drop(t, f)
	// The kernel follows each O_DSYNC write with an fdatasync, which makes
	// the earlier buffered write durable too, as on any filesystem.
	want(t, f.p("s"), "bbaaCCaa\x00\x00DD")

	// O_DIRECT: the write alone is durable (no fsync follows it).
	durable(t, f, "d", strings.Repeat("a", 2*pageSize))
	write(t, f.p("d"), 0, "bb", false)
	buf, err := unix.Mmap(-1, 0, pageSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE) // aligned
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(buf)
	copy(buf, strings.Repeat("C", pageSize))
	fd, err := unix.Open(f.p("d"), unix.O_RDWR|unix.O_DIRECT, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := unix.Pwrite(fd, buf, pageSize); err != nil {
		t.Fatal(err)
	}
	unix.Close(fd)
	drop(t, f)
	want(t, f.p("d"), strings.Repeat("a", pageSize)+strings.Repeat("C", pageSize))
}

func TestConcurrentWriters(t *testing.T) {
	f := mountT(t, Options{})
	const writers, size = 8, 256 << 10
	orig := bytes.Repeat([]byte{'.'}, size)
	for i := 0; i < writers; i++ {
		durable(t, f, fmt.Sprintf("w%d", i), string(orig))
	}
	durable(t, f, "shared", string(bytes.Repeat([]byte{'.'}, writers*size)))
	data := func(i int) []byte { return bytes.Repeat([]byte{byte('a' + i)}, size) }
	sh, err := os.OpenFile(f.p("shared"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer sh.Close()
	var wg sync.WaitGroup
	errs := make(chan error, 2*writers)
	for i := 0; i < writers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(i), 1))
			fh, err := os.OpenFile(f.p(fmt.Sprintf("w%d", i)), os.O_RDWR, 0)
			if err != nil {
				errs <- err
				return
			}
			defer fh.Close()
			d := data(i)
			for off := 0; off < size; { // random chunk sizes, not page aligned
				n := min(1+rng.IntN(20000), size-off)
				if _, err := fh.WriteAt(d[off:off+n], int64(off)); err != nil {
					errs <- err
					return
				}
				if _, err := sh.WriteAt(d[off:off+n], int64(i*size+off)); err != nil {
					errs <- err
					return
				}
				off += n
			}
			if i%2 == 0 {
				errs <- fh.Sync()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	drop(t, f)
	for i := 0; i < writers; i++ {
		exp := orig
		if i%2 == 0 {
			exp = data(i)
		}
		want(t, f.p(fmt.Sprintf("w%d", i)), string(exp))
	}
	want(t, f.p("shared"), string(bytes.Repeat([]byte{'.'}, writers*size)))
}

// TestUnixSocketAndUnmount: MariaDB listens on a socket in its datadir;
// the filesystem unmounts cleanly and leaves the backing directory as is.
func TestUnixSocketAndUnmount(t *testing.T) {
	f := mountT(t, Options{})
	l, err := net.Listen("unix", f.p("s.sock"))
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		c, err := l.Accept()
		if err == nil {
			c.Write([]byte("hi"))
			c.Close()
		}
	}()
	c, err := net.Dial("unix", f.p("s.sock"))
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 2)
	if _, err := c.Read(b); err != nil || string(b) != "hi" {
		t.Fatalf("read %q %v", b, err)
	}
	c.Close()
	l.Close()
	write(t, f.p("left"), 0, "unsynced, kept by unmount", false)
	if err := f.Unmount(); err != nil {
		t.Fatal(err)
	}
	if mounted(f.Mountpoint()) {
		t.Fatal("still mounted")
	}
	want(t, filepath.Join(f.Backing(), "left"), "unsynced, kept by unmount")
	if _, err := f.DropUnsynced(); !errors.Is(err, ErrNotMounted) {
		t.Fatalf("drop after unmount: %v", err)
	}
}

// TestThroughput logs buffered and fsynced write rates through the mount
// next to the backing directory's, in one run (a ratio, not a bound).
func TestThroughput(t *testing.T) {
	f := mountT(t, Options{})
	rate := func(dir string, fsyncEvery int) float64 {
		fh, err := os.Create(filepath.Join(dir, fmt.Sprintf("bench%d", fsyncEvery)))
		if err != nil {
			t.Fatal(err)
		}
		defer fh.Close()
		buf := bytes.Repeat([]byte{1}, 16<<10)
		start := time.Now()
		for i := 0; i < 2000; i++ {
			if _, err := fh.WriteAt(buf, int64(i%500)*int64(len(buf))); err != nil {
				t.Fatal(err)
			}
			if fsyncEvery > 0 && i%fsyncEvery == 0 {
				if err := fh.Sync(); err != nil {
					t.Fatal(err)
				}
			}
		}
		return float64(2000*len(buf)) / time.Since(start).Seconds() / (1 << 20)
	}
	for _, every := range []int{0, 4} {
		lazy, direct := rate(f.Mountpoint(), every), rate(f.Backing(), every)
		t.Logf("16 KiB writes, fsync every %d: lazyfs %.0f MiB/s, backing ext4 %.0f MiB/s (ratio %.2f)", every, lazy, direct, lazy/direct)
	}
}

// TestDropWithCopyInAnotherMountNamespace: every `ip netns exec` copies
// the mounts into a namespace of its own; a drop must not wait for such a
// copy to go (the FUSE connection is aborted) and the old copy must not
// serve the backing directory any more.
func TestDropWithCopyInAnotherMountNamespace(t *testing.T) {
	f := mountT(t, Options{})
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("no unshare(1)")
	}
	durable(t, f, "a", "durable")
	write(t, f.p("a"), 0, "DURABLE", false)
	holder := exec.Command("unshare", "-m", "--propagation", "private", "sh", "-c",
		"cat "+f.p("a")+" && sleep 60")
	out, err := holder.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = holder.Process.Kill(); _ = holder.Wait() }()
	buf := make([]byte, 7)
	if _, err := io.ReadFull(out, buf); err != nil || string(buf) != "DURABLE" {
		t.Fatalf("holder read %q %v", buf, err)
	}
	done := make(chan error, 1)
	go func() { _, err := f.DropUnsynced(); done <- err }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("drop waits for the copy in the other mount namespace")
	}
	want(t, f.p("a"), "durable")
}

// TestUnbufferedNamesSurvive: diagnostic logs (Options.Unbuffered) keep
// every write and their names through a drop, opened any number of times.
func TestUnbufferedNamesSurvive(t *testing.T) {
	f := mountT(t, Options{Unbuffered: []string{"error.log"}})
	ap, err := os.OpenFile(f.p("error.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ap.WriteString("line 1\n"); err != nil {
		t.Fatal(err)
	}
	want(t, f.p("error.log"), "line 1\n") // a second open while the first is open
	ap.Close()
	write(t, f.p("other.log"), 0, "buffered", false)
	drop(t, f)
	want(t, f.p("error.log"), "line 1\n")
	want(t, f.p("other.log"), "<absent>")
}

// TestTruncateOfSparseFileSavesOnlyData: Badger sizes its files with
// ftruncate, syncs them and cuts them short at close; the cut must save
// the durable data pages only (holes are zeros after the revert anyway),
// and a drop must still bring every durable byte back.
func TestTruncateOfSparseFileSavesOnlyData(t *testing.T) {
	f := mountT(t, Options{})
	const size = 16 << 20
	fh, err := os.OpenFile(f.p("vlog"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	if err := fh.Truncate(size); err != nil {
		t.Fatal(err)
	}
	for _, off := range []int64{0, 8 << 20, size - 10} {
		if _, err := fh.WriteAt([]byte("durable!!!"), off); err != nil {
			t.Fatal(err)
		}
	}
	if err := fh.Sync(); err != nil {
		t.Fatal(err)
	}
	syncDir(t, f.Mountpoint())
	if err := fh.Truncate(20); err != nil {
		t.Fatal(err)
	}
	if _, err := fh.WriteAt([]byte("later"), 10<<20); err != nil { // regrown: zeros below, not durable
		t.Fatal(err)
	}
	if st := stats(t, f); st.SavedBytes > 4*pageSize {
		t.Fatalf("saved %d bytes for a cut of a sparse file with 3 data pages", st.SavedBytes)
	}
	drop(t, f)
	b, err := os.ReadFile(f.p("vlog"))
	if err != nil {
		t.Fatal(err)
	}
	exp := make([]byte, size)
	for _, off := range []int64{0, 8 << 20, size - 10} {
		copy(exp[off:], "durable!!!")
	}
	if !bytes.Equal(b, exp) {
		t.Fatalf("after the drop: %d bytes, want %d, equal %v", len(b), len(exp), bytes.Equal(b, exp))
	}
}
