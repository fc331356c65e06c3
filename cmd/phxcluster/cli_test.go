package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"phxgo/internal/cli"
)

// The command line keeps internal/cli's exit codes: -h 0, a bad command
// line 2; none of these cases starts, stops or dials anything.
func TestRunExitCodes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "nocluster")
	for _, tc := range []struct {
		args string
		code int
	}{
		{"-h", 0},
		{"--help", 0},
		{"help", 0},
		{"", 2},
		{"nosuchcmd", 2},
		{"-nosuchflag", 2},
		{"up -h", 0},
		{"down --help", 0},
		{"up -nosuchflag", 2},
		{"status -nodes x", 2},
		{"down -dir " + dir + " stray", 2},
		{"status -dir " + dir + " stray", 2},
	} {
		err := run(strings.Fields(tc.args))
		if got := cli.Code(err); got != tc.code {
			t.Errorf("phxcluster %s: exit %d (%v), want %d", tc.args, got, err, tc.code)
		}
	}
}

// A cluster.json that cannot be read is an error (exit 1) naming it,
// and it is left as it was: up, down and status do not fall back to the
// flags' node count.
func TestDamagedClusterJSON(t *testing.T) {
	for _, body := range []string{"{not json", `{"nodes": []}`} {
		dir := t.TempDir()
		path := filepath.Join(dir, "cluster.json")
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		for _, cmd := range []string{"up", "down", "status"} {
			err := run([]string{cmd, "-dir", dir, "-bin", t.TempDir()})
			if cli.Code(err) != 1 || err == nil || !strings.Contains(err.Error(), path) {
				t.Errorf("%s with cluster.json %q: %v (exit %d), want exit 1 naming %s", cmd, body, err, cli.Code(err), path)
			}
		}
		if b, _ := os.ReadFile(path); string(b) != body {
			t.Errorf("cluster.json rewritten to %q", b)
		}
	}
}
