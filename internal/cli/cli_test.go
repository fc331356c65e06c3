package cli

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"testing"
)

func TestParseAndCode(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		code    int
		printed string // what Report writes
	}{
		{nil, ExitOK, ""},
		{[]string{"-addr", "a"}, ExitOK, ""},
		{[]string{"-h"}, ExitOK, ""},
		{[]string{"--help"}, ExitOK, ""},
		{[]string{"-nosuchflag"}, ExitUsage, ""}, // the flag package printed it
		{[]string{"-n", "x"}, ExitUsage, ""},
		{[]string{"stray"}, ExitUsage, "t: sub: unexpected arguments [\"stray\"] (flags go before them; this command takes none)\n"},
		{[]string{"-addr", "a", "127.0.0.1:1"}, ExitUsage, "t: sub: unexpected arguments [\"127.0.0.1:1\"] (flags go before them; this command takes none)\n"},
	} {
		fs := flag.NewFlagSet("sub", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		fs.String("addr", "", "")
		fs.Int("n", 0, "")
		err := Parse(fs, tc.args)
		var buf bytes.Buffer
		if got := Report(&buf, "t", err); got != tc.code || buf.String() != tc.printed {
			t.Errorf("%q: code %d, printed %q; want %d, %q", tc.args, got, buf.String(), tc.code, tc.printed)
		}
	}
}

func TestReport(t *testing.T) {
	for _, tc := range []struct {
		err  error
		code int
		out  string
	}{
		{errors.New("boom"), ExitFailure, "x: boom\n"},
		{fmt.Errorf("wrapped: %w", Usagef("-to is required")), ExitUsage, "x: wrapped: -to is required\n"},
		{flag.ErrHelp, ExitOK, ""},
		{Usagef("x: unexpected arguments"), ExitUsage, "x: unexpected arguments\n"}, // not "x: x: "
	} {
		var buf bytes.Buffer
		if got := Report(&buf, "x", tc.err); got != tc.code || buf.String() != tc.out {
			t.Errorf("%v: %d %q; want %d %q", tc.err, got, buf.String(), tc.code, tc.out)
		}
	}
}

func TestParseArgsKeepsPositionals(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	if err := ParseArgs(fs, []string{"a", "b"}); err != nil || fs.NArg() != 2 {
		t.Fatalf("%v %q", err, fs.Args())
	}
}
