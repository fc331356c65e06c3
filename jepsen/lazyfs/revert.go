package lazyfs

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// Dropped is what a drop undid.
type Dropped struct {
	Files int   // files whose data or size went back
	Bytes int64 // bytes written back from the saved pages
	Dirs  int   // directories whose listing went back
	Moved int   // names removed (not durable) or put back (durable)
}

// revert makes the backing directory hold exactly the durable state. No
// process may use the mount meanwhile (it is down).
//
//  1. every changed directory: a name its durable listing lacks, or that
//     names another inode now, moves to trash (as trash/<inode>);
//  2. every changed directory: a durable name that is missing comes back
//     from trash (a file is linked, a directory moved); a directory found
//     elsewhere (renamed into a synced directory) stays there;
//  3. every file: its durable size and saved pages are written back;
//  4. trash is emptied and everything forgotten.
func (s *state) revert() (Dropped, error) {
	s.mu.Lock()
	dirs := make([]*dirState, 0, len(s.dirs))
	for _, d := range s.dirs {
		dirs = append(dirs, d)
	}
	files := make([]*fileState, 0, len(s.files))
	for _, f := range s.files {
		files = append(files, f)
	}
	s.mu.Unlock()
	var out Dropped
	out.Dirs = len(dirs)
	trash, err := unix.Open(s.trash, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return out, fmt.Errorf("lazyfs: trash: %w", err)
	}
	defer unix.Close(trash)
	var errs []error
	for _, d := range dirs { // 1
		cur, err := list(d.f)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for name, e := range cur {
			if want, ok := d.entries[name]; (ok && want.ino == e.ino) || s.isExempt(name) {
				continue
			}
			out.Moved++
			errs = append(errs, toTrash(int(d.f.Fd()), name, trash, e))
		}
	}
	for _, d := range dirs { // 2
		cur, err := list(d.f)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for name, e := range d.entries {
			if _, ok := cur[name]; ok || s.isExempt(name) {
				continue
			}
			src := strconv.FormatUint(e.ino, 10)
			var st unix.Stat_t
			if unix.Fstatat(trash, src, &st, unix.AT_SYMLINK_NOFOLLOW) != nil || st.Ino != e.ino {
				if !e.dir {
					slog.Warn("lazyfs: a durable file is gone", "name", name, "ino", e.ino)
				}
				continue
			}
			out.Moved++
			if e.dir {
				errs = append(errs, unix.Renameat(trash, src, int(d.f.Fd()), name))
			} else {
				errs = append(errs, unix.Linkat(trash, src, int(d.f.Fd()), name, 0))
			}
		}
	}
	for _, f := range files { // 3
		if name, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(f.fd)); err == nil && s.isExempt(name) {
			continue
		}
		var st unix.Stat_t
		changed := len(f.pages) > 0 || (unix.Fstat(f.fd, &st) == nil && st.Size != f.size)
		n, err := f.revert()
		errs = append(errs, err)
		if n >= 1<<20 {
			name, _ := os.Readlink("/proc/self/fd/" + strconv.Itoa(f.fd))
			slog.Info("lazyfs: large unsynced overwrite put back", "file", name, "bytes", n)
		}
		out.Bytes += n
		if changed {
			out.Files++
		}
	}
	errs = append(errs, s.reset()) // 4
	return out, errors.Join(errs...)
}

// toTrash moves name out of dir into trash as trash/<inode>; a file
// already there (another name of it) is just unlinked here.
func toTrash(dir int, name string, trash int, e entry) error {
	dst := strconv.FormatUint(e.ino, 10)
	if !e.dir {
		var st unix.Stat_t
		if unix.Fstatat(trash, dst, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Ino == e.ino {
			return unix.Unlinkat(dir, name, 0)
		}
	}
	if err := unix.Renameat(dir, name, trash, dst); err != nil {
		return fmt.Errorf("lazyfs: drop %s: %w", name, err)
	}
	return nil
}
