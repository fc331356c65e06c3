package lazyfs

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// fusectl is where the kernel lists FUSE connections, by device minor.
const fusectl = "/sys/fs/fuse/connections"

// mountMinor finds the device minor of the FUSE mount at mountpoint in
// /proc/self/mountinfo. It never touches the mount itself: a stat would
// wait for a server that is stopped or gone.
func mountMinor(mountpoint string) (uint64, bool, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return 0, false, err
	}
	defer f.Close()
	var minor uint64
	found := false
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		// "36 35 0:45 / /mnt/x rw,... - fuse.lazyfs /backing rw,..."
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 || unescapeMount(fields[4]) != mountpoint {
			continue
		}
		sep := -1
		for i, f := range fields {
			if f == "-" {
				sep = i
				break
			}
		}
		if sep < 0 || sep+1 >= len(fields) || !strings.HasPrefix(fields[sep+1], "fuse") {
			continue
		}
		_, mn, ok := strings.Cut(fields[2], ":")
		if !ok {
			continue
		}
		if minor, err = strconv.ParseUint(mn, 10, 32); err != nil {
			return 0, false, fmt.Errorf("lazyfs: mountinfo %q: %w", fields[2], err)
		}
		found = true // the last one is on top
	}
	return minor, found, sc.Err()
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// mounted tells whether a FUSE filesystem is mounted at mountpoint.
func mounted(mountpoint string) bool {
	_, ok, _ := mountMinor(mountpoint)
	return ok
}

// abort ends the FUSE connection of the mount at mountpoint through
// fusectl: every request waiting on it fails (ENOTCONN) and the server's
// reads end. Without it, a copy of the mount in another mount namespace
// (every `ip netns exec` makes one) keeps the connection and the server
// alive after unmount.
func abort(mountpoint string) error {
	if _, err := os.Stat(filepath.Dir(fusectl)); err == nil {
		if ents, _ := os.ReadDir(fusectl); len(ents) == 0 {
			_ = exec.Command("mount", "-t", "fusectl", "none", fusectl).Run()
		}
	}
	minor, ok, err := mountMinor(mountpoint)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%w: %s", ErrNotMounted, mountpoint)
	}
	err = os.WriteFile(filepath.Join(fusectl, strconv.FormatUint(minor, 10), "abort"), []byte("1"), 0o200)
	if errors.Is(err, os.ErrNotExist) {
		return nil // the connection ended meanwhile
	}
	return err
}

// forceUnmount takes down a mount whose server is dead or hung: its
// connection is aborted, then it is detached (umount2 MNT_DETACH, or
// fusermount3 -u -z where that is refused). Nothing here waits for the
// server.
func forceUnmount(mountpoint string) error {
	if !mounted(mountpoint) {
		return nil
	}
	abortErr := abort(mountpoint)
	err := unix.Unmount(mountpoint, unix.MNT_DETACH)
	if err != nil && !errors.Is(err, unix.EINVAL) { // EINVAL: not a mount point (any more)
		if out, ferr := exec.Command("fusermount3", "-u", "-z", mountpoint).CombinedOutput(); ferr != nil {
			return fmt.Errorf("lazyfs: unmount %s: %w; fusermount3: %v %s (abort: %v)", mountpoint, err, ferr,
				strings.TrimSpace(string(out)), abortErr)
		}
	}
	if mounted(mountpoint) {
		return fmt.Errorf("lazyfs: %s still mounted after a lazy unmount (abort: %v)", mountpoint, abortErr)
	}
	return nil
}
