package mysqld

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
)

// ServerOSUser is the OS account mariadbd runs as when this process is
// root (Debian's package creates it). mariadbd never runs as root: a SQL
// account with FILE, or a bug in the server, would otherwise read and
// write every file on the host, binlogd's keys and credentials included.
// When this process is not root, mariadbd runs as this process's user
// (it cannot switch) and no chown happens.
const ServerOSUser = "mysql"

// ErrNoServerUser means binlogd runs as root and the mysql OS user is missing.
var ErrNoServerUser = errors.New("mysqld: OS user " + ServerOSUser + " not found; mariadbd must not run as root (install the mariadb-server package or `useradd --system " + ServerOSUser + "`)")

// osUser is a uid/gid pair to chown the server's files to.
type osUser struct {
	name     string
	uid, gid int
}

// serverUser returns who mariadbd runs as, or nil when it runs as this
// process's own user (this process is not root).
func serverUser() (*osUser, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup(ServerOSUser)
	if err != nil {
		return nil, ErrNoServerUser
	}
	uid, err1 := strconv.Atoi(u.Uid)
	gid, err2 := strconv.Atoi(u.Gid)
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("mysqld: OS user %s has uid %q gid %q", ServerOSUser, u.Uid, u.Gid)
	}
	return &osUser{name: u.Username, uid: uid, gid: gid}, nil
}

// FilesDir is secure_file_priv: the only directory LOAD DATA INFILE,
// SELECT ... INTO OUTFILE and LOAD_FILE() may touch (and only for an
// account holding FILE, which no phxgo account but the admin has).
func (i *Instance) FilesDir() string { return filepath.Join(i.opts.Dir, "files") }

// prepareDirs lays out the instance directory for a server running as su
// (nil: as ourselves).
//
//	Dir        root:mysql 1771  my.cnf (root, 0644) + the server's socket,
//	                            pid file and error log; the sticky bit lets
//	                            mysql create its files but never replace or
//	                            remove root's my.cnf (say, by a symlink that
//	                            root would later write through)
//	Dir/data   mysql 0750       the datadir, chowned whole at every start so
//	Dir/tmp    mysql 0750       a datadir from an older phxgo (which ran the
//	Dir/files  mysql 0750       server as root) works
//
// Every ancestor of Dir gets the search bit (o+x) if mysql could not
// traverse it otherwise (t.TempDir()'s parents are 0700): only the x bit,
// which lets mysql reach the path, not list or change any directory.
func (i *Instance) prepareDirs(su *osUser) error {
	for _, d := range []string{i.opts.Dir, i.DataDir(), i.TmpDir(), i.FilesDir()} {
		if err := os.MkdirAll(d, 0o750); err != nil {
			return err
		}
	}
	if su == nil {
		return nil
	}
	if err := os.Chown(i.opts.Dir, 0, su.gid); err != nil {
		return err
	}
	if err := os.Chmod(i.opts.Dir, 0o771|fs.ModeSticky); err != nil {
		return err
	}
	if err := i.allowTraverse(su); err != nil {
		return err
	}
	for _, d := range []string{i.DataDir(), i.TmpDir(), i.FilesDir()} {
		if err := chownTree(d, su); err != nil {
			return err
		}
		if err := os.Chmod(d, 0o750); err != nil {
			return err
		}
	}
	// The server's own files in Dir, left owned by root by an older phxgo.
	for _, f := range []string{i.ErrorLog(), i.PidFile()} {
		if err := os.Lchown(f, su.uid, su.gid); err != nil && !os.IsNotExist(err) {
			return err
		}
	}
	return nil
}

// chownTree gives every entry under dir to su, not following symlinks
// (a link in the datadir must not make root chown its target).
func chownTree(dir string, su *osUser) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if st, ok := info.Sys().(*syscall.Stat_t); ok && int(st.Uid) == su.uid && int(st.Gid) == su.gid {
			return nil
		}
		return os.Lchown(p, su.uid, su.gid)
	})
}

// allowTraverse adds o+x to each ancestor of the instance dir that su
// could not search.
func (i *Instance) allowTraverse(su *osUser) error {
	for d := filepath.Dir(i.opts.Dir); ; d = filepath.Dir(d) {
		info, err := os.Stat(d)
		if err != nil {
			return err
		}
		st, ok := info.Sys().(*syscall.Stat_t)
		mode := info.Mode().Perm()
		if ok && !canSearch(st, mode, su) {
			if err := os.Chmod(d, info.Mode()&(fs.ModePerm|fs.ModeSticky|fs.ModeSetuid|fs.ModeSetgid)|0o001); err != nil {
				return fmt.Errorf("mysqld: %s must be searchable by OS user %s: %w", d, su.name, err)
			}
			i.opts.Logger.Warn("added the search bit (o+x) so mariadbd's OS user can reach its directory", "dir", d, "user", su.name)
		}
		if d == filepath.Dir(d) {
			return nil
		}
	}
}

func canSearch(st *syscall.Stat_t, mode fs.FileMode, su *osUser) bool {
	switch {
	case int(st.Uid) == su.uid:
		return mode&0o100 != 0
	case int(st.Gid) == su.gid:
		return mode&0o010 != 0
	default:
		return mode&0o001 != 0
	}
}
