package reseed

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeBackup writes a directory shaped like a prepared backup.
func fakeBackup(t *testing.T, pos string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "backup")
	for _, sub := range []string{"app", "mysql"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o750); err != nil {
			t.Fatal(err)
		}
	}
	for name, body := range map[string]string{
		"mysql/global_priv.MAD": "accounts",
		BinlogInfoFile:          "binlog.000003\t385\t" + pos + "\n",
		"ibdata1":               strings.Repeat("p", 100000),
		"app/t.ibd":             "rows",
		"app/db.opt":            "charset",
		"backup-my.cnf":         "[mysqld]",
		"xtrabackup_info":       "",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o640); err != nil {
			t.Fatal(err)
		}
	}
	m := Manifest{Format: 1, SourceNode: 2, Position: pos, PositionFrom: BinlogInfoFile, TakenAt: time.Now(), Prepared: true}
	if err := writeManifest(dir, m); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestRestoreDir: the copy replaces the datadir (kept aside), leaves the
// backup whole for the next node and does not carry the manifest.
func TestRestoreDir(t *testing.T) {
	backup := fakeBackup(t, "0-2-57")
	datadir := filepath.Join(t.TempDir(), "mysql", "data")
	if err := os.MkdirAll(datadir, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(datadir, "ibdata1"), []byte("old"), 0o640); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	m, res, err := RestoreDir(context.Background(), backup, Target{DataDir: datadir, Progress: &out})
	if err != nil {
		t.Fatal(err)
	}
	if m.Position != "0-2-57" || res.Position != "0-2-57" || res.OldDir == "" || res.Bytes < 100000 {
		t.Fatalf("manifest %+v, result %+v", m, res)
	}
	if b, _ := os.ReadFile(filepath.Join(datadir, "app", "t.ibd")); string(b) != "rows" {
		t.Fatalf("app/t.ibd in the restored datadir: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(res.OldDir, "ibdata1")); string(b) != "old" {
		t.Fatalf("old datadir not kept: %q", b)
	}
	if _, err := os.Stat(filepath.Join(datadir, ManifestFile)); !os.IsNotExist(err) {
		t.Fatalf("manifest copied into the datadir: %v", err)
	}
	if !strings.Contains(out.String(), "restore: received 97.") {
		t.Fatalf("no final progress line:\n%s", out.String())
	}
	// The backup is untouched: a second node restores from it too.
	other := filepath.Join(t.TempDir(), "data")
	if _, _, err := RestoreDir(context.Background(), backup, Target{DataDir: other}); err != nil {
		t.Fatal(err)
	}
}

// TestRestoreThroughSymlink is the red-team finding of session 37: a
// backup named through a symlink (backups/latest) was walked as the link
// alone, nothing was copied, and the node got an empty datadir at the
// backup's position. The link is followed now; and a copy that holds no
// datadir (no mysql/) is refused before the swap.
func TestRestoreThroughSymlink(t *testing.T) {
	backup := fakeBackup(t, "0-2-57")
	link := filepath.Join(t.TempDir(), "latest")
	if err := os.Symlink(backup, link); err != nil {
		t.Fatal(err)
	}
	datadir := filepath.Join(t.TempDir(), "data")
	_, res, err := RestoreDir(context.Background(), link, Target{DataDir: datadir})
	if err != nil || res.Bytes < 100000 {
		t.Fatalf("restore through a symlink: %d bytes, %v", res.Bytes, err)
	}
	if b, _ := os.ReadFile(filepath.Join(datadir, "app", "t.ibd")); string(b) != "rows" {
		t.Fatalf("app/t.ibd through the symlink: %q", b)
	}

	if err := os.RemoveAll(filepath.Join(backup, "mysql")); err != nil {
		t.Fatal(err)
	}
	kept := filepath.Join(t.TempDir(), "data")
	if err := os.MkdirAll(kept, 0o750); err != nil {
		t.Fatal(err)
	}
	_, _, err = RestoreDir(context.Background(), backup, Target{DataDir: kept})
	if err == nil || !strings.Contains(err.Error(), "not a MariaDB datadir") {
		t.Fatalf("a backup without mysql/: %v", err)
	}
	if entries, _ := os.ReadDir(filepath.Dir(kept)); len(entries) != 1 {
		t.Fatalf("a refused restore left %d entries beside the datadir, want only it", len(entries))
	}
}

// TestDiscardOldWaits: the old datadir goes only when the caller says the
// copy took its position (DiscardOldDir), never at the swap.
func TestDiscardOldWaits(t *testing.T) {
	backup := fakeBackup(t, "0-2-57")
	datadir := filepath.Join(t.TempDir(), "data")
	if err := os.MkdirAll(datadir, 0o750); err != nil {
		t.Fatal(err)
	}
	target := Target{DataDir: datadir, DiscardOld: true}
	_, res, err := RestoreDir(context.Background(), backup, target)
	if err != nil || res.OldDir == "" {
		t.Fatalf("restore: old dir %q, %v", res.OldDir, err)
	}
	if _, err := os.Stat(res.OldDir); err != nil {
		t.Fatalf("the old datadir went at the swap: %v", err)
	}
	old := res.OldDir
	if err := target.DiscardOldDir(&res); err != nil || res.OldDir != "" {
		t.Fatalf("DiscardOldDir: %q, %v", res.OldDir, err)
	}
	if _, err := os.Stat(old); !os.IsNotExist(err) {
		t.Fatalf("the old datadir after DiscardOldDir: %v", err)
	}
}

// TestReadManifestRefuses: an unfinished backup (no manifest) and one
// whose manifest disagrees with mariadb-backup's file are refused, and a
// refused restore leaves the datadir alone.
func TestReadManifestRefuses(t *testing.T) {
	backup := fakeBackup(t, "0-2-57")
	if err := os.WriteFile(filepath.Join(backup, BinlogInfoFile), []byte("binlog.000003\t385\t0-2-58\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	datadir := filepath.Join(t.TempDir(), "data")
	if _, _, err := RestoreDir(context.Background(), backup, Target{DataDir: datadir}); err == nil || !strings.Contains(err.Error(), `records position "0-2-57"`) {
		t.Fatalf("mismatched manifest: %v", err)
	}
	if _, err := os.Stat(datadir); !os.IsNotExist(err) {
		t.Fatalf("refused restore touched the datadir: %v", err)
	}
	if err := os.Remove(filepath.Join(backup, ManifestFile)); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadManifest(backup); err == nil || !strings.Contains(err.Error(), "no finished phxgo backup") {
		t.Fatalf("no manifest: %v", err)
	}
}
