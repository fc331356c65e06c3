package mysqld

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// TLSFiles name the node's PEM files (binlogd's tls_cert, tls_key,
// tls_ca). The server cannot read them where they are (the key is 0600
// and binlogd's), so Init copies them into TLSDir.
type TLSFiles struct {
	Cert, Key, CA string
}

// Enabled reports whether all three files are set.
func (f TLSFiles) Enabled() bool { return f.Cert != "" && f.Key != "" && f.CA != "" }

// Names of the copies in TLSDir.
const (
	tlsCert = "server.crt"
	tlsKey  = "server.key"
	tlsCA   = "ca.crt"
)

// TLSDir holds the server's copies of the node's certificate, key and CA.
//
//	Dir/tls             root:mysql 0750  (as root; else ours, 0700): only
//	                                     binlogd creates or renames entries,
//	                                     so the server cannot plant a link
//	                                     that root would write through
//	Dir/tls/server.crt  mysql 0600       the node's certificate (chain)
//	Dir/tls/server.key  mysql 0600       its key
//	Dir/tls/ca.crt      mysql 0600       the cluster CA
func (i *Instance) TLSDir() string { return filepath.Join(i.opts.Dir, "tls") }

func (i *Instance) tlsCopy(name string) string { return filepath.Join(i.TLSDir(), name) }

// copyTLS writes the server's copies of the TLS files (none without TLS).
// Each file is written to a temporary name and renamed, so a server
// reading it during a reload sees the old file or the new one.
func (i *Instance) copyTLS(su *osUser) error {
	if !i.opts.TLS.Enabled() {
		return nil
	}
	dir := i.TLSDir()
	// Dir is writable by the server's user (sticky): whatever sits at
	// Dir/tls and is not our own directory goes (a link is removed, not
	// followed).
	if fi, err := os.Lstat(dir); err == nil {
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !fi.IsDir() || !ok || int(st.Uid) != os.Geteuid() {
			if err := os.RemoveAll(dir); err != nil {
				return fmt.Errorf("mysqld: replace %s: %w", dir, err)
			}
		}
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !os.IsExist(err) {
		return fmt.Errorf("mysqld: %w", err)
	}
	mode := os.FileMode(0o700)
	if su != nil {
		if err := os.Chown(dir, os.Geteuid(), su.gid); err != nil {
			return fmt.Errorf("mysqld: %w", err)
		}
		mode = 0o750
	}
	if err := os.Chmod(dir, mode); err != nil {
		return fmt.Errorf("mysqld: %w", err)
	}
	for _, f := range []struct{ src, name string }{
		{i.opts.TLS.Cert, tlsCert}, {i.opts.TLS.Key, tlsKey}, {i.opts.TLS.CA, tlsCA},
	} {
		if err := copyForServer(f.src, i.tlsCopy(f.name), su); err != nil {
			return fmt.Errorf("mysqld: TLS file for the server: %w", err)
		}
	}
	return nil
}

// copyForServer copies src to dst, mode 0600, owned by su (nil: by us).
func copyForServer(src, dst string, su *osUser) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(dst), "."+filepath.Base(dst)+".*") // 0600
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after the rename, nothing is there
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if su != nil {
		if err := os.Chown(tmp.Name(), su.uid, su.gid); err != nil {
			return err
		}
	}
	return os.Rename(tmp.Name(), dst)
}

// RefreshTLS copies the TLS files again (after binlogd reloaded them) and,
// when the server runs, makes it load them with FLUSH SSL: new
// connections get the new certificate, open ones keep their session. A
// server started without TLS does not take it up here (ssl_* are read at
// start); it does at its next start. Errors leave the server on its old
// files (FLUSH SSL keeps the old context when the new one fails to load).
func (i *Instance) RefreshTLS(ctx context.Context) error {
	if !i.opts.TLS.Enabled() {
		return nil
	}
	su, err := serverUser()
	if err != nil {
		return err
	}
	if err := i.copyTLS(su); err != nil {
		return err
	}
	if i.Pid() == 0 {
		return nil
	}
	db, err := i.open("")
	if err != nil {
		return err
	}
	defer db.Close()
	// LOCAL: a plain FLUSH is written to the binlog, a transaction of
	// this server's own that the cluster never chose (on a replica, a
	// GTID the master's stream then collides with; binlogd marks the
	// node UNSAFE at its next recovery).
	if _, err := db.ExecContext(ctx, "FLUSH LOCAL SSL"); err != nil {
		return fmt.Errorf("mysqld: FLUSH SSL: %w", err)
	}
	return nil
}
