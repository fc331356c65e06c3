package preflight

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"phxgo/binlogd/config"
)

// testEnv is an Env over temp dirs: the running account is root (as the
// tests run), programs are stubbed to fail unless a test says otherwise.
func testEnv(t *testing.T) *Env {
	t.Helper()
	return &Env{
		ConfigPath: filepath.Join(t.TempDir(), "binlogd.json"),
		Root:       t.TempDir(),
		Runner:     Account{Name: "root", UID: 0, GID: 0, Groups: []int{0}},
		MySQL:      &Account{Name: "mysql", UID: 4242, GID: 4242, Groups: []int{4242}},
		Run: func(ctx context.Context, name string, args ...string) ([]byte, error) {
			return nil, fmt.Errorf("%s: not stubbed", name)
		},
		LookPath: func(f string) (string, error) { return "", fmt.Errorf("%s: not found", f) },
		Now:      time.Now(),
		Limits:   DefaultLimits(),
	}
}

// testConfig is a valid one-node config (no TLS) whose dirs are under a
// temp dir.
func testConfig(t *testing.T) *config.Config {
	t.Helper()
	d := t.TempDir()
	return &config.Config{
		ID: 1, Dir: filepath.Join(d, "n1"), MySQLDir: filepath.Join(d, "n1", "mysql"),
		CredentialsFile: filepath.Join(d, "cred.json"),
		Members:         []config.Member{{ID: 1, GRPCAddr: "127.0.0.1:1", MySQLAddr: "127.0.0.1:2"}},
		ReplAddr:        "127.0.0.1:3",
		Security:        config.Security{InsecureNoTLS: true},
	}
}

// only returns the results whose check starts with prefix.
func only(rs []Result, prefix string) []Result {
	var out []Result
	for _, r := range rs {
		if strings.HasPrefix(r.Check, prefix) {
			out = append(out, r)
		}
	}
	return out
}

// want asserts that exactly one result is there, with status st and a
// finding and fix containing the given parts.
func want1(t *testing.T, rs []Result, st Status, finding, fix string) Result {
	t.Helper()
	if len(rs) != 1 {
		t.Fatalf("want 1 result, got %d: %+v", len(rs), rs)
	}
	r := rs[0]
	if r.Status != st || !strings.Contains(r.Finding, finding) || !strings.Contains(r.Fix, fix) {
		t.Fatalf("got %s %s: %s (fix: %s); want %s with finding ~%q, fix ~%q", r.Status, r.Check, r.Finding, r.Fix, st, finding, fix)
	}
	if st != OK && r.Fix == "" {
		t.Fatalf("%s without a fix: %+v", st, r)
	}
	return r
}

func writeFile(t *testing.T, path, body string, mode os.FileMode) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil { // the umask
		t.Fatal(err)
	}
	return path
}
