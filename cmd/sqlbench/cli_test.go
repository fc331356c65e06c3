package main

import (
	"strings"
	"testing"

	"phxgo/internal/cli"
)

// The command line keeps internal/cli's exit codes: -h 0, a bad command
// line 2. No case gets as far as dialling or running anything.
func TestDispatchExitCodes(t *testing.T) {
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
		{"report -h", 0},
		{"report -nosuchflag", 2},
		{"report -results x stray", 2},
		{"sustained", 2},
		{"rejected", 2},
		{"waitapplied", 2},
		{"waitapplied -master 127.0.0.1:1 -replicas 127.0.0.1:2 stray", 2},
		{"baseline-up", 2},
		{"baseline-up -dir /nonexistent/x -base-port 1 -apply-threads -1", 2},
		{"baseline-up -dir /nonexistent/x -base-port 1 -apply-threads 257", 2},
		{"baseline-down", 2},
		{"run", 2},
		{"run -nosuchflag", 2},
		{"run -label x -- --sysbench-opt", 2}, // -target etc. missing; the rest after -- is sysbench's
	} {
		err := dispatch(strings.Fields(tc.args))
		if got := cli.Code(err); got != tc.code {
			t.Errorf("sqlbench %s: exit %d (%v), want %d", tc.args, got, err, tc.code)
		}
	}
}
