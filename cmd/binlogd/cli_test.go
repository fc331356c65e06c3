package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"phxgo/binlogd/config"
)

// Every command keeps the conventions of internal/cli: -h exits 0, a bad
// command line 2 (nothing dialled, nothing read), a runtime error 1. No
// case here dials anything: each fails before connecting.
func TestExitCodes(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "binlogd")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmds := []string{"run", "status", "recover", "switchover", "events", "reload", "log", "stop-mysql",
		"init", "seed", "reseed", "backup", "restore", "wal-repair", "check"}
	type tc struct {
		args    string
		code    int
		wantErr string // in stderr
	}
	cases := []tc{
		{"-h", 0, "usage: binlogd"},
		{"--help", 0, "usage: binlogd"},
		{"help", 0, "usage: binlogd"},
		{"", 2, "usage: binlogd"},
		{"nosuchcmd", 2, `unknown command "nosuchcmd"`},
		{"-nosuchflag", 2, "unknown command"},
		{"cluster -h", 0, "-max-lag-seconds"},
		{"cluster --help", 0, "-max-lag-seconds"},
		{"cluster", 2, "usage: binlogd cluster status"},
		{"cluster bogus", 2, "usage: binlogd cluster status"},
		{"cluster status -nosuchflag", 2, "flag provided but not defined"},
		{"cluster status 127.0.0.1:1", 2, "unexpected arguments"},
		{"members -h", 0, "usage: binlogd members"},
		{"members help", 0, "usage: binlogd members"},
		{"members", 2, "members: want"},
		{"members bogus", 2, `unknown subcommand "bogus"`},
		{"members list -h", 0, "-addr"},
		{"members list -nosuchflag", 2, "flag provided but not defined"},
		{"members list 127.0.0.1:1", 2, "unexpected arguments"},
		{"members promote x", 2, "is not a node id"},
		{"members remove -insecure", 2, "-id is required"}, // the client is lazy: nothing dialled
		{"status 127.0.0.1:1", 2, `unexpected arguments ["127.0.0.1:1"]`},
		{"status -tls-dir T -addr 127.0.0.1:1 127.0.0.1:2", 2, `unexpected arguments ["127.0.0.1:2"]`},
		{"status", 1, "no client certificate"},
		{"switchover", 2, "-to is required"},
		{"backup", 2, "-from GRPC_ADDR and -out DIR are required"},
		{"backup -from 127.0.0.1:1 -out /nonexistent/b -stall-timeout -1s", 2, "-stall-timeout -1s is negative"},
		{"backup -from 127.0.0.1:1 -out /nonexistent/b -min-free-mb -5", 2, "-min-free-mb -5 is out of range"},
		{"restore", 2, "-from BACKUP_DIR is required"},
		{"run -log-level loud", 2, "-log-level"},
		{"run -config /nonexistent/binlogd.json", 1, "no such file"},
	}
	for _, c := range cmds {
		stray := "unexpected arguments"
		if c == "check" {
			stray = "usage: binlogd check"
		}
		cases = append(cases,
			tc{c + " -h", 0, "-"},
			tc{c + " --help", 0, "-"},
			tc{c + " -nosuchflag", 2, "flag provided but not defined: -nosuchflag"},
			tc{c + " stray", 2, stray})
	}
	for _, c := range cases {
		cmd := exec.Command(bin, strings.Fields(c.args)...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		err := cmd.Run()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("%s: %v", c.args, err)
		}
		if code != c.code || !strings.Contains(stderr.String(), c.wantErr) {
			t.Errorf("binlogd %s: exit %d, stderr %q; want exit %d and %q", c.args, code, firstLine(stderr.String()), c.code, c.wantErr)
		}
	}
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// binlogd run with its log's reader gone (binlogd run 2>&1 | head): a
// write to the closed stderr must fail, not kill the node by SIGPIPE
// before its shutdown. The missing config makes it write an error and
// exit 1 at once.
func TestRunSurvivesClosedStderr(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "binlogd")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	defer w.Close()
	cmd := exec.Command(bin, "run", "-config", "/nonexistent/binlogd.json")
	cmd.Stdout, cmd.Stderr = w, w
	err = cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("binlogd run: %v, want exit 1", err)
	}
	if ws := ee.Sys().(syscall.WaitStatus); ws.Signaled() || ee.ExitCode() != 1 {
		t.Fatalf("binlogd run with a closed stderr: %v (signal %v), want exit 1", err, ws.Signal())
	}
}

// binlogd run refuses a credentials file that group or others may read,
// or (run as root) one owned by another user, before it starts anything:
// the error names the file, its mode or owner, and the fix. `binlogd
// check` was the only place that looked before.
func TestRunRefusesExposedCredentials(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "binlogd")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "binlogd.json")
	cfg := `{"id":1,"insecure_no_tls":true,"dir":"n1","mysql_dir":"n1/mysql","credentials_file":"cred.json",
 "members":[
  {"id":1,"grpc_addr":"127.0.0.1:1","mysql_addr":"127.0.0.1:2"},
  {"id":2,"grpc_addr":"127.0.0.1:4","mysql_addr":"127.0.0.1:5"},
  {"id":3,"grpc_addr":"127.0.0.1:7","mysql_addr":"127.0.0.1:8"}]}`
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	cred := filepath.Join(dir, "cred.json")
	if err := config.SaveCredentials(cred, config.Credentials{CaptureUser: "c", CapturePassword: "p", AppUser: "a", AppPassword: "q"}); err != nil {
		t.Fatal(err)
	}
	run := func() (string, int) {
		cmd := exec.Command(bin, "run", "-config", cfgPath)
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatalf("binlogd run: %v, want a refusal\n%s", err, out)
		}
		return string(out), ee.ExitCode()
	}
	if err := os.Chmod(cred, 0o640); err != nil {
		t.Fatal(err)
	}
	if out, code := run(); code != 1 || !strings.Contains(out, cred+" has mode 0640") || !strings.Contains(out, "chmod 600 "+cred) {
		t.Fatalf("group-readable credentials: exit %d\n%s", code, out)
	}
	if os.Geteuid() != 0 {
		return // chown needs root
	}
	if err := os.Chmod(cred, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(cred, 4242, 4242); err != nil {
		t.Fatal(err)
	}
	if out, code := run(); code != 1 || !strings.Contains(out, cred+" is owned by uid 4242") || !strings.Contains(out, "chown root "+cred) {
		t.Fatalf("credentials of another user: exit %d\n%s", code, out)
	}
}
