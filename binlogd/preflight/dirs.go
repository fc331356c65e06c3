package preflight

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// Permission bits a check asks of an account.
const (
	permX = 1 // traverse (directory) / execute
	permW = 2
	permR = 4
)

// may reports whether a may do perm (permR|permW|permX) on the file st
// describes, by its owner, group and mode as the kernel decides (root may
// do all but execute a file nobody may execute; ACLs are not read).
func may(a Account, st fs.FileInfo, perm uint32) bool {
	sys, isUnix := st.Sys().(*syscall.Stat_t)
	if !isUnix {
		return false
	}
	if a.UID == 0 {
		return true
	}
	mode := uint32(st.Mode().Perm())
	switch {
	case int(sys.Uid) == a.UID:
		mode >>= 6
	case inGroups(a, int(sys.Gid)):
		mode >>= 3
	}
	return mode&perm == perm
}

func inGroups(a Account, gid int) bool {
	if a.GID == gid {
		return true
	}
	for _, g := range a.Groups {
		if g == gid {
			return true
		}
	}
	return false
}

func owner(st fs.FileInfo) (uid, gid int) {
	if sys, isUnix := st.Sys().(*syscall.Stat_t); isUnix {
		return int(sys.Uid), int(sys.Gid)
	}
	return -1, -1
}

// nearestExisting is path or its closest existing ancestor, and whether
// that is path itself.
func nearestExisting(path string) (string, fs.FileInfo, bool, error) {
	p := filepath.Clean(path)
	for {
		st, err := os.Stat(p)
		if err == nil {
			return p, st, p == filepath.Clean(path), nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return p, nil, false, err
		}
		parent := filepath.Dir(p)
		if parent == p {
			return p, nil, false, err
		}
		p = parent
	}
}

// CheckDirs checks dir and mysql_dir: each exists or can be created by
// binlogd's user and is writable by it, and mariadbd's user (mysql when
// binlogd is root) can reach mysql_dir and write its datadir.
func CheckDirs(env *Env) []Result {
	cfg := env.Config
	if cfg == nil {
		return nil
	}
	var out []Result
	if cfg.Dir != "" {
		out = append(out, checkWritableDir("dir", cfg.Dir, env.Runner))
	}
	if cfg.MySQLDir != "" {
		out = append(out, checkWritableDir("mysql_dir", cfg.MySQLDir, env.Runner))
		out = append(out, checkMySQLReach(env, cfg.MySQLDir)...)
	}
	return out
}

// checkWritableDir: path is a directory a may write, or can be created by a.
func checkWritableDir(key, path string, a Account) Result {
	name := "dir " + key
	at, st, exists, err := nearestExisting(path)
	if err != nil {
		return fail(name, fmt.Sprintf("make %s reachable by %s (see the error above)", at, a.Name), "%s: %v", path, err)
	}
	if exists {
		if !st.IsDir() {
			return fail(name, fmt.Sprintf("move the file away, or set %s to a directory", key), "%s exists and is not a directory", path)
		}
		if !may(a, st, permW|permX) {
			return fail(name, fmt.Sprintf("sudo chown %s %s && sudo chmod u+rwx %s", a.Name, path, path),
				"%s is not writable by %s, who runs binlogd", path, a.Name)
		}
		return ok(name, "%s exists and %s can write it", path, a.Name)
	}
	if !st.IsDir() || !may(a, st, permW|permX) {
		return fail(name, fmt.Sprintf("sudo mkdir -p %s && sudo chown %s %s", path, a.Name, path),
			"%s does not exist and %s cannot create it in %s", path, a.Name, at)
	}
	return ok(name, "%s does not exist yet; %s can create it in %s", path, a.Name, at)
}

// checkMySQLReach: mariadbd's account can traverse every directory down
// to mysql_dir. binlogd (binlogd/mysqld prepareDirs) adds the search bit
// to such a directory itself at start, and chowns the datadir to mysql,
// so an untraversable one is a warn: it will change a mode the operator
// set. When binlogd is not root, mariadbd runs as binlogd's own user and
// checkWritableDir covered it.
func checkMySQLReach(env *Env, mysqlDir string) []Result {
	const name = "dir mysql_dir (mariadbd)"
	if env.Runner.UID != 0 {
		return nil
	}
	m, found := env.mariadbdUser()
	if !found {
		return []Result{fail(name, "sudo useradd --system --no-create-home --shell /usr/sbin/nologin "+MySQLUser,
			"binlogd runs as root, so mariadbd runs as the OS user %q, which does not exist (binlogd refuses to run it as root)", MySQLUser)}
	}
	var out []Result
	for p := filepath.Dir(filepath.Clean(mysqlDir)); ; p = filepath.Dir(p) {
		if st, err := os.Stat(p); err == nil && st.IsDir() && !may(m, st, permX) {
			out = append(out, warn(name, fmt.Sprintf("sudo chmod o+x %s (or move mysql_dir where %s can reach it)", p, m.Name),
				"%s cannot traverse %s (mode %v) to reach %s; binlogd will add o+x to it at start", m.Name, p, st.Mode().Perm(), mysqlDir))
		}
		if p == filepath.Dir(p) {
			break
		}
	}
	if len(out) == 0 {
		out = append(out, ok(name, "%s can reach %s", m.Name, mysqlDir))
	}
	return out
}

// CheckSecretFiles checks that the credentials file and the TLS key are
// 0600 (no group or other bits) and owned by binlogd's user.
func CheckSecretFiles(env *Env) []Result {
	cfg := env.Config
	if cfg == nil {
		return nil
	}
	var out []Result
	for _, f := range []struct{ key, path string }{{"credentials_file", cfg.CredentialsFile}, {"tls_key", cfg.TLSKey}} {
		if f.path == "" {
			continue
		}
		out = append(out, checkSecretFile("perms "+f.key, f.path, env.Runner))
	}
	return out
}

func checkSecretFile(name, path string, a Account) Result {
	st, err := os.Stat(path)
	if err != nil {
		return fail(name, fmt.Sprintf("create it (mode 0600, owned by %s) or correct the path in the config", a.Name), "%v", err)
	}
	uid, _ := owner(st)
	switch {
	case st.Mode().Perm()&0o077 != 0:
		return fail(name, "chmod 600 "+path, "%s has mode %04o: it holds secrets, others must not read it", path, st.Mode().Perm())
	case uid != a.UID:
		return fail(name, fmt.Sprintf("sudo chown %s %s", a.Name, path), "%s is owned by uid %d, not by %s (uid %d), who runs binlogd", path, uid, a.Name, a.UID)
	case !may(a, st, permR):
		return fail(name, "chmod 600 "+path, "%s is not readable by its owner %s (mode %04o)", path, a.Name, st.Mode().Perm())
	}
	return ok(name, "%s is %04o and owned by %s", path, st.Mode().Perm(), a.Name)
}
