package lazyfs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// entry is one name in a directory's durable listing.
type entry struct {
	ino uint64
	dir bool
}

// dirState is a directory changed since its last fsync: its durable
// listing, taken from the backing directory before the first change.
type dirState struct {
	f       *os.File // the backing directory, path-independent
	entries map[string]entry
}

// state is what the filesystem has not made durable, across mounts.
type state struct {
	trash  string   // backing-side directory keeping inodes a drop may need
	exempt []string // base names written through (see Options.Unbuffered)

	mu    sync.Mutex
	files map[uint64]*fileState
	dirs  map[uint64]*dirState
	// refs counts, per inode, the durable listings naming it: such an
	// inode must outlive its last current name (it is linked into trash).
	refs map[uint64]int
}

func newState(trash string, exempt []string) *state {
	return &state{trash: trash, exempt: exempt, files: map[uint64]*fileState{},
		dirs: map[uint64]*dirState{}, refs: map[uint64]int{}}
}

func (s *state) isExempt(name string) bool {
	for _, e := range s.exempt {
		if filepath.Base(name) == e {
			return true
		}
	}
	return false
}

// file returns the data state of the inode fd (any descriptor of the
// backing file) refers to, tracking it from now on.
func (s *state) file(fd int) (*fileState, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if f, ok := s.files[st.Ino]; ok {
		return f, nil
	}
	own, err := unix.Open("/proc/self/fd/"+strconv.Itoa(fd), unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("lazyfs: reopen for undo: %w", err)
	}
	f := &fileState{fd: own, size: st.Size, pages: map[int64][]byte{}}
	s.files[st.Ino] = f
	return f, nil
}

// commitJournal makes every file's fallocate'd size durable, as the
// journal commit of ext4 (and XFS) does on any fsync: a new .ibd's size
// is then durable once any later fsync returns, though its data is not
// (InnoDB creates a tablespace with fallocate and an O_DIRECT page 0
// and never fsyncs it; keeping that size volatile left a datadir ext4
// cannot: an .ibd of one page under a durable name, which InnoDB refuses
// for good, scripts/innodb-crash-repro).
func (s *state) commitJournal() error {
	s.mu.Lock()
	var grown []*fileState
	for _, f := range s.files {
		f.mu.Lock()
		if f.allocEnd > 0 {
			grown = append(grown, f)
		}
		f.mu.Unlock()
	}
	s.mu.Unlock()
	var errs []error
	for _, f := range grown {
		f.io.RLock()
		errs = append(errs, f.commitAlloc())
		f.io.RUnlock()
	}
	return errors.Join(errs...)
}

// fileAt is file for a backing path.
func (s *state) fileAt(path string) (*fileState, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	return s.file(fd)
}

func list(dir *os.File) (map[string]entry, error) {
	d, err := os.Open("/proc/self/fd/" + strconv.Itoa(int(dir.Fd())))
	if err != nil {
		return nil, err
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	out := make(map[string]entry, len(names))
	for _, n := range names {
		var st unix.Stat_t
		if err := unix.Fstatat(int(dir.Fd()), n, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			if errors.Is(err, unix.ENOENT) {
				continue
			}
			return nil, err
		}
		out[n] = entry{ino: st.Ino, dir: st.Mode&unix.S_IFMT == unix.S_IFDIR}
	}
	return out, nil
}

// dirChange is called before the backing directory path changes: the
// first change since its last fsync records its durable listing.
func (s *state) dirChange(path string) error {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return err
	}
	s.mu.Lock()
	_, ok := s.dirs[st.Ino]
	s.mu.Unlock()
	if ok {
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	es, err := list(f)
	if err != nil {
		f.Close()
		return fmt.Errorf("lazyfs: list %s: %w", path, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.dirs[st.Ino]; ok { // raced with another change of it
		f.Close()
		return nil
	}
	s.dirs[st.Ino] = &dirState{f: f, entries: es}
	for _, e := range es {
		s.refs[e.ino]++
	}
	return nil
}

// dirSynced makes the backing directory path's listing durable as it is.
func (s *state) dirSynced(path string) error {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dropDir(st.Ino)
	return nil
}

// dropDir forgets directory ino's durable listing. Caller holds s.mu.
func (s *state) dropDir(ino uint64) {
	d, ok := s.dirs[ino]
	if !ok {
		return
	}
	for _, e := range d.entries {
		if s.refs[e.ino]--; s.refs[e.ino] <= 0 {
			delete(s.refs, e.ino)
		}
	}
	d.f.Close()
	delete(s.dirs, ino)
}

// nameSynced makes name -> ino durable in the backing directory dir,
// leaving its other names as they are (fsync of a file with
// Options.FsyncPersistsName).
func (s *state) nameSynced(dir, name string, e entry) error {
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.dirs[st.Ino]
	if !ok {
		return nil // the whole listing is durable
	}
	if old, ok := d.entries[name]; ok {
		if s.refs[old.ino]--; s.refs[old.ino] <= 0 {
			delete(s.refs, old.ino)
		}
	}
	d.entries[name] = e
	s.refs[e.ino]++
	return nil
}

func (s *state) trashPath(ino uint64) string {
	return filepath.Join(s.trash, strconv.FormatUint(ino, 10))
}

// preserve is called before path's entry goes away (unlink, rmdir, the
// target of a rename). An inode some durable listing names is kept: a
// file linked into trash, a directory moved there (moved reports that:
// the caller's rmdir is then done).
func (s *state) preserve(path string) (moved bool, err error) {
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		return false, nil // the caller's operation reports it
	}
	s.mu.Lock()
	keep := s.refs[st.Ino] > 0
	s.mu.Unlock()
	if !keep {
		return false, nil
	}
	dst := s.trashPath(st.Ino)
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		if err := unix.Rename(path, dst); err != nil {
			return false, fmt.Errorf("lazyfs: keep %s: %w", path, err)
		}
		return true, nil
	}
	if err := unix.Linkat(unix.AT_FDCWD, path, unix.AT_FDCWD, dst, 0); err != nil && !errors.Is(err, unix.EEXIST) {
		return false, fmt.Errorf("lazyfs: keep %s: %w", path, err)
	}
	return false, nil
}

// preserveFile links path into trash if it is a file some durable
// listing names (the source of a rename).
func (s *state) preserveFile(path string) error {
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil || st.Mode&unix.S_IFMT == unix.S_IFDIR {
		return nil
	}
	_, err := s.preserve(path)
	return err
}

// Stats describe what a drop would lose.
type Stats struct {
	Files      int   // files with unsynced data or size
	SavedBytes int64 // durable bytes held in memory to put back
	Dirs       int   // directories with unsynced entries
}

func (s *state) stats() Stats {
	s.mu.Lock()
	files := make([]*fileState, 0, len(s.files))
	for _, f := range s.files {
		files = append(files, f)
	}
	st := Stats{Dirs: len(s.dirs)}
	s.mu.Unlock()
	for _, f := range files {
		f.mu.Lock()
		var cur unix.Stat_t
		dirty := len(f.pages) > 0 || (unix.Fstat(f.fd, &cur) == nil && cur.Size != f.size)
		f.mu.Unlock()
		if dirty {
			st.Files++
		}
		st.SavedBytes += f.savedBytes()
	}
	return st
}

// reset forgets everything (all of it is durable now) and empties trash.
func (s *state) reset() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, f := range s.files {
		unix.Close(f.fd)
	}
	for ino := range s.dirs {
		s.dropDir(ino)
	}
	s.files, s.refs = map[uint64]*fileState{}, map[uint64]int{}
	return emptyDir(s.trash)
}

func emptyDir(dir string) error {
	names, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, n := range names {
		errs = append(errs, os.RemoveAll(filepath.Join(dir, n.Name())))
	}
	return errors.Join(errs...)
}
