package reseed

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	pb "phxgo/proto"
)

// ManifestFile is what WriteBackup adds to a backup directory, last: a
// directory without it is not a finished backup.
const ManifestFile = "phxgo-backup.json"

// Manifest describes a backup directory written by WriteBackup.
type Manifest struct {
	Format         int       `json:"format"` // 1
	SourceNode     uint32    `json:"source_node"`
	MariaDBVersion string    `json:"mariadb_version"`
	Position       string    `json:"gtid_position"` // every transaction up to it is in the backup, none after
	PositionFrom   string    `json:"position_from"` // the mariadb-backup file it was read from
	Bytes          int64     `json:"stream_bytes"`
	TakenAt        time.Time `json:"taken_at"`
	Prepared       bool      `json:"prepared"` // mariadb-backup --prepare ran: the directory is a datadir
}

// WriteBackup reads a Backup stream into dir, which must not exist,
// extracts and prepares it (so it is a consistent datadir that needs no
// source to restore) and writes the manifest. On failure dir is removed.
func WriteBackup(ctx context.Context, recv func() (*pb.BackupChunk, error), dir string, t Target) (Manifest, Result, error) {
	now, _, _ := t.defaults()
	var res Result
	if _, err := os.Stat(dir); err == nil {
		return Manifest{}, res, fmt.Errorf("backup: %s exists; give a new directory", dir)
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o750); err != nil {
		return Manifest{}, res, fmt.Errorf("backup: %w", err)
	}
	if err := receiveInto(ctx, recv, dir, "backup", t, &res); err != nil {
		return Manifest{}, res, err
	}
	m := Manifest{Format: 1, SourceNode: res.Info.SourceNode, MariaDBVersion: res.Info.MariadbVersion,
		Position: res.Position, PositionFrom: res.PositionFrom, Bytes: res.Bytes, TakenAt: now().UTC(), Prepared: true}
	if err := writeManifest(dir, m); err != nil {
		_ = os.RemoveAll(dir)
		return Manifest{}, res, err
	}
	return m, res, nil
}

func writeManifest(dir string, m Manifest) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, ManifestFile+".tmp")
	if err := os.WriteFile(tmp, append(b, '\n'), 0o640); err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	return os.Rename(tmp, filepath.Join(dir, ManifestFile))
}

// ReadManifest reads a backup directory's manifest and checks that the
// position it records is the one mariadb-backup wrote there.
func ReadManifest(dir string) (Manifest, error) {
	var m Manifest
	b, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if err != nil {
		return m, fmt.Errorf("restore: %s is no finished phxgo backup (binlogd backup writes %s last): %w", dir, ManifestFile, err)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("restore: %s: %w", filepath.Join(dir, ManifestFile), err)
	}
	switch {
	case m.Format != 1:
		return m, fmt.Errorf("restore: %s has format %d; this binlogd reads format 1", dir, m.Format)
	case !m.Prepared:
		return m, fmt.Errorf("restore: %s was not prepared", dir)
	}
	pos, _, err := Position(dir)
	if err != nil {
		return m, err
	}
	if pos != m.Position {
		return m, fmt.Errorf("restore: %s records position %q but its %s says %q", ManifestFile, m.Position, m.PositionFrom, pos)
	}
	return m, nil
}

// RestoreDir copies a backup directory (WriteBackup) into a new directory
// beside t.DataDir and swaps it in, as Receive does with a live stream.
// The backup stays as it was, so one backup can make several nodes.
func RestoreDir(ctx context.Context, backup string, t Target) (Manifest, Result, error) {
	now, out, every := t.defaults()
	var res Result
	// The walk below does not follow a symlink it starts from: through
	// a link to a backup it copied nothing, and the node got an empty
	// datadir at the backup's position (red-team pass, session 37).
	backup, err := filepath.EvalSymlinks(backup)
	if err != nil {
		return Manifest{}, res, fmt.Errorf("restore: %w", err)
	}
	m, err := ReadManifest(backup)
	if err != nil {
		return m, res, err
	}
	res.Info = &pb.BackupInfo{SourceNode: m.SourceNode, MariadbVersion: m.MariaDBVersion}
	res.Position, res.PositionFrom = m.Position, m.PositionFrom
	stamp := now().UTC().Format("20060102T150405")
	newDir := t.DataDir + ".restore-" + stamp
	if err := os.MkdirAll(filepath.Dir(t.DataDir), 0o750); err != nil {
		return m, res, fmt.Errorf("restore: %w", err)
	}
	if err := os.Mkdir(newDir, 0o750); err != nil {
		return m, res, fmt.Errorf("restore: %w", err)
	}
	fmt.Fprintf(out, "restore: copying %s (node %d's data at %s) into %s\n", backup, m.SourceNode, orNone(m.Position), newDir)
	p := startProgress(out, "restore", EstimateBytes(backup), every, 0)
	err = copyTree(ctx, backup, newDir, p)
	p.finish()
	res.Bytes, res.Copy = p.bytes.Load(), time.Since(p.start)
	if err == nil {
		err = looksLikeDataDir(newDir)
	}
	if err == nil {
		err = swapIn(newDir, t, stamp, &res)
	}
	if err != nil {
		_ = os.RemoveAll(newDir)
		return m, res, err
	}
	return m, res, nil
}

// looksLikeDataDir checks that dir holds a MariaDB datadir (its system
// schema, mysql/): a copy without one would be swapped in, and MariaDB's
// install would then make an empty server that claims the backup's
// position.
func looksLikeDataDir(dir string) error {
	if st, err := os.Stat(filepath.Join(dir, "mysql")); err != nil || !st.IsDir() {
		return fmt.Errorf("restore: the copy in %s has no mysql/ directory: not a MariaDB datadir (the old datadir is unchanged)", dir)
	}
	return nil
}

// copyTree copies the regular files and directories of src into dst
// (which exists), without the manifest.
func copyTree(ctx context.Context, src, dst string, p *progress) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		rel, err := filepath.Rel(src, path)
		if err != nil || rel == "." || rel == ManifestFile {
			return err
		}
		to := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return os.Mkdir(to, info.Mode().Perm()|0o700)
		case !info.Mode().IsRegular():
			return fmt.Errorf("restore: %s is not a regular file; a backup holds only files", path)
		}
		return copyFile(path, to, info.Mode().Perm(), p)
	})
}

func copyFile(from, to string, perm fs.FileMode, p *progress) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm|0o600)
	if err != nil {
		return err
	}
	_, cerr := io.Copy(out, progressReader{in, p})
	if err := errors.Join(cerr, out.Sync(), out.Close()); err != nil {
		return fmt.Errorf("restore: copy %s: %w", from, err)
	}
	return nil
}

type progressReader struct {
	r io.Reader
	p *progress
}

func (r progressReader) Read(b []byte) (int, error) {
	n, err := r.r.Read(b)
	r.p.add(n)
	return n, err
}
