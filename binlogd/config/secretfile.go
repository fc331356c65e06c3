package config

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
)

// The credentials file holds MariaDB passwords. binlogd reads it at start
// only if, as ssh demands of a private key or an authorized_keys file:
//
//   - it grants no permission to group or others (mode 0600 or 0400):
//     anyone who can read it can log in as binlogd's accounts, anyone who
//     can write it chooses the passwords binlogd creates its accounts with;
//   - its owner is the user binlogd runs as, or root: the owner may chmod
//     and rewrite it whatever its mode, so another owner is someone else
//     holding binlogd's MariaDB accounts. Root owning it gives nothing
//     away (root can read every file anyway).
//
// `binlogd check` (binlogd/preflight) reports the same and more (the
// file readable by its owner, the passwords' strength).

// anyOwner, as the euid of openSecretFile, skips the owner check.
const anyOwner = -1

// openSecretFile opens path for reading and checks, on the open file (no
// race with a rename), the rules above for a process running as euid.
// key names the config key in the error.
func openSecretFile(key, path string, euid int) (*os.File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrInvalid, key, err)
	}
	st, err := f.Stat()
	if err == nil {
		err = checkSecretMode(key, path, st, euid)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

func checkSecretMode(key, path string, st fs.FileInfo, euid int) error {
	if perm := st.Mode().Perm(); perm&0o077 != 0 {
		return fmt.Errorf("%w: %s %s has mode %04o: it holds MariaDB passwords, group and others must have no access (mode 0600 or 0400); fix: chmod 600 %s",
			ErrInvalid, key, path, perm, path)
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok || euid == anyOwner {
		return nil
	}
	if uid := int(sys.Uid); uid != euid && uid != 0 {
		return fmt.Errorf("%w: %s %s is owned by %s, but binlogd runs as %s: only that user or root may own it (its owner can rewrite it whatever its mode); fix: chown %s %s",
			ErrInvalid, key, path, userName(uid), userName(euid), userArg(euid), path)
	}
	return nil
}

// userName is "name (uid N)", or "uid N" for an id without a name.
func userName(uid int) string {
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil {
		return fmt.Sprintf("%s (uid %d)", u.Username, uid)
	}
	return fmt.Sprintf("uid %d", uid)
}

// userArg is what chown takes for uid.
func userArg(uid int) string {
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil {
		return u.Username
	}
	return strconv.Itoa(uid)
}

// readSecretFile is openSecretFile and its contents.
func readSecretFile(key, path string, euid int) ([]byte, error) {
	f, err := openSecretFile(key, path, euid)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("%w: %s %s: %v", ErrInvalid, key, path, err)
	}
	return b, nil
}

// writeSecretFile replaces path with b, mode 0600, owned by the writer:
// through a new temporary file renamed over it, so an existing file's
// wider mode or other owner does not survive (os.WriteFile keeps both).
func writeSecretFile(path string, b []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(b)
	if err == nil {
		err = f.Chmod(0o600) // CreateTemp makes 0600 already; say it
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}
