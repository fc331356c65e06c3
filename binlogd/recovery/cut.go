package recovery

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"phxgo/binlogd/binlog"
)

// Plan is what Cut will do (or did): keep every group before At, cut At
// and everything after it.
type Plan struct {
	Kept     []binlog.GTID
	Cut      []binlog.GTID
	File     string // file truncated ("" when nothing is cut)
	Offset   int64  // its new length
	Removed  []string
	LastKept binlog.GTID
	// CutNonTransactional are the cut groups that were DDL or wrote a
	// non-transactional table (no FL_TRANSACTIONAL): see NonTransactionalCut.
	CutNonTransactional []binlog.GTID
}

func (p Plan) String() string {
	if p.File == "" {
		return fmt.Sprintf("nothing to cut; kept %d transactions up to %s", len(p.Kept), p.LastKept)
	}
	return fmt.Sprintf("kept %d transactions up to %q; cut %d (%s) at %s:%d; removed files %v",
		len(p.Kept), p.LastKept.String(), len(p.Cut), gtids(p.Cut), p.File, p.Offset, p.Removed)
}

func gtids(l []binlog.GTID) string {
	s := make([]string, len(l))
	for i, g := range l {
		s[i] = g.String()
	}
	return strings.Join(s, ",")
}

// MakePlan cuts at the first group that is torn or not valid.
// valid[i] answers for groups[i].
func MakePlan(groups []Group, valid []bool) (Plan, error) {
	if len(valid) != len(groups) {
		return Plan{}, fmt.Errorf("recovery: %d verdicts for %d groups", len(valid), len(groups))
	}
	var p Plan
	cut := -1
	for i, g := range groups {
		if cut < 0 && g.Complete && valid[i] {
			p.Kept = append(p.Kept, g.GTID)
			p.LastKept = g.GTID
			continue
		}
		if cut < 0 {
			cut = i
			p.File, p.Offset = g.File, g.Start
		}
		p.Cut = append(p.Cut, g.GTID)
		if !g.Transactional {
			p.CutNonTransactional = append(p.CutNonTransactional, g.GTID)
		}
	}
	return p, nil
}

// Apply truncates the binlog per p: the cut file to p.Offset and marked in
// use, later files removed, the index rewritten atomically (temp file,
// fsync, rename).
func Apply(indexPath string, p Plan) (Plan, error) {
	if p.File == "" {
		return p, nil
	}
	files, err := Files(indexPath)
	if err != nil {
		return p, err
	}
	keep := -1
	for i, f := range files {
		if filepath.Base(f) == p.File {
			keep = i
		}
	}
	if keep < 0 {
		return p, fmt.Errorf("recovery: %s is not in %s", p.File, indexPath)
	}
	if err := truncateSync(files[keep], p.Offset); err != nil {
		return p, err
	}
	// The cut file becomes the newest binlog: it must look in use so the
	// server's crash recovery rolls back the cut prepared transactions,
	// even if the server had rotated away from it (markInUse).
	if err := markInUse(files[keep]); err != nil {
		return p, err
	}
	var lines []string
	for _, f := range files[:keep+1] {
		lines = append(lines, "./"+filepath.Base(f))
	}
	if err := writeAtomic(indexPath, []byte(strings.Join(lines, "\n")+"\n")); err != nil {
		return p, err
	}
	for _, f := range files[keep+1:] {
		if err := os.Remove(f); err != nil && !os.IsNotExist(err) {
			return p, fmt.Errorf("recovery: remove %s: %w", f, err)
		}
		p.Removed = append(p.Removed, filepath.Base(f))
	}
	return p, nil
}

// truncateSync does not follow a symlink: the datadir belongs to the
// server's OS user, and a link planted there must not make binlogd (root)
// truncate its target.
func truncateSync(path string, size int64) error {
	f, err := os.OpenFile(path, os.O_RDWR|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		return fmt.Errorf("recovery: truncate %s to %d: %w", path, size, err)
	}
	return f.Sync()
}

// writeAtomic replaces path with data, keeping path's owner, group and
// mode: mariadbd runs as its own OS user (mysqld.ServerOSUser) and must
// still be able to read and rewrite the index after binlogd, as root,
// replaced it. The temp file is created afresh (O_EXCL, no symlink
// followed) in a directory the server's user can write to.
func writeAtomic(path string, data []byte) error {
	st, err := os.Lstat(path)
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("recovery: %s is not a regular file", path)
	}
	tmp := path + ".phxgo-tmp"
	if err := os.Remove(tmp); err != nil && !os.IsNotExist(err) {
		return err
	}
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_EXCL|os.O_WRONLY|syscall.O_NOFOLLOW, st.Mode().Perm())
	if err != nil {
		return err
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok && (int(sys.Uid) != os.Geteuid() || int(sys.Gid) != os.Getegid()) {
		if err := f.Chown(int(sys.Uid), int(sys.Gid)); err != nil {
			f.Close()
			return fmt.Errorf("recovery: keep the owner of %s: %w", path, err)
		}
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	d, err := os.Open(filepath.Dir(path))
	if err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}
