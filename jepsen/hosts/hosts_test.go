package hosts

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"phxgo/binlogd/localcluster"
)

// TestHosts runs the whole scenario (doc.go) on real namespaces, real
// cgroups, real mariadbd, with the units' own command lines, and prints
// the run's last line. Skipped where namespaces, cgroup v2 or the units'
// user are missing, and in -short.
func TestHosts(t *testing.T) {
	if testing.Short() {
		t.Skip("starts four hosts with real MariaDB")
	}
	if err := Supported(); err != nil {
		t.Skip(err)
	}
	repo, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	if err := localcluster.BuildBinaries(bin); err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	res, err := Run(ctx, Options{BinDir: bin, RepoDir: repo, WorkDir: work, Logf: t.Logf})
	if errors.Is(err, ErrUnsupported) {
		t.Skip(err)
	}
	t.Logf("took %.0fs; %d rows acknowledged; added host seeded by %s", res.Took.Seconds(), res.Acked, res.Seed)
	t.Log(res.Line())
	if err != nil || !res.Pass {
		dumpLogs(t, work)
		t.Fatalf("%s: %v", res.Line(), err)
	}
}

// dumpLogs prints the end of every unit's log of a failed run.
func dumpLogs(t *testing.T, work string) {
	logs, _ := filepath.Glob(filepath.Join(work, "log", "*.log"))
	for _, f := range logs {
		b, _ := os.ReadFile(f)
		if len(b) > 3000 {
			b = b[len(b)-3000:]
		}
		t.Logf("--- %s (tail)\n%s", f, b)
	}
}
