package preflight

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// Status is a check's verdict.
type Status int

// The verdicts, in rising severity.
const (
	OK   Status = iota // nothing to do
	Warn               // works, but an operator should know (and usually act)
	Fail               // binlogd will not start, or will run unsafely
)

// String is the word printed at the start of a report line.
func (s Status) String() string {
	switch s {
	case OK:
		return "ok"
	case Warn:
		return "warn"
	default:
		return "FAIL"
	}
}

// MarshalText lets -json print "ok", "warn" or "FAIL".
func (s Status) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads what MarshalText wrote (scripts in Go, tests).
func (s *Status) UnmarshalText(b []byte) error {
	for _, v := range []Status{OK, Warn, Fail} {
		if string(b) == v.String() {
			*s = v
			return nil
		}
	}
	return fmt.Errorf("preflight: unknown status %q", b)
}

// Result is one finding of one check.
type Result struct {
	// Check names what was checked, e.g. "port grpc_addr", "perms credentials_file".
	Check  string `json:"check"`
	Status Status `json:"status"`
	// Finding says what was found, with the figures or paths involved.
	Finding string `json:"finding"`
	// Fix is the exact command or config change that removes the problem;
	// set for every Warn and Fail.
	Fix string `json:"fix,omitempty"`
}

func ok(check, format string, args ...any) Result {
	return Result{Check: check, Status: OK, Finding: fmt.Sprintf(format, args...)}
}

func warn(check, fix, format string, args ...any) Result {
	return Result{Check: check, Status: Warn, Finding: fmt.Sprintf(format, args...), Fix: fix}
}

func fail(check, fix, format string, args ...any) Result {
	return Result{Check: check, Status: Fail, Finding: fmt.Sprintf(format, args...), Fix: fix}
}

// Worst is the most severe status among rs (OK for none).
func Worst(rs []Result) Status {
	w := OK
	for _, r := range rs {
		w = max(w, r.Status)
	}
	return w
}

// ExitCode is binlogd check's exit status: 1 when any check failed, else 0.
func ExitCode(rs []Result) int {
	if Worst(rs) == Fail {
		return 1
	}
	return 0
}

// WriteText prints one line per result, `ok|warn|FAIL <check>: <finding>`,
// and under each problem `  fix: <fix>`; then a summary line.
func WriteText(w io.Writer, rs []Result) error {
	var b strings.Builder
	var n [3]int
	for _, r := range rs {
		n[r.Status]++
		fmt.Fprintf(&b, "%s %s: %s\n", r.Status, r.Check, r.Finding)
		if r.Fix != "" && r.Status != OK {
			fmt.Fprintf(&b, "  fix: %s\n", r.Fix)
		}
	}
	fmt.Fprintf(&b, "%d ok, %d warn, %d FAIL\n", n[OK], n[Warn], n[Fail])
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteJSON prints {"results": [...], "ok": n, "warn": n, "fail": n}
// for scripts.
func WriteJSON(w io.Writer, rs []Result) error {
	var n [3]int
	for _, r := range rs {
		n[r.Status]++
	}
	if rs == nil {
		rs = []Result{}
	}
	out := struct {
		Results []Result `json:"results"`
		OK      int      `json:"ok"`
		Warn    int      `json:"warn"`
		Fail    int      `json:"fail"`
	}{rs, n[OK], n[Warn], n[Fail]}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
