package main

import (
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
