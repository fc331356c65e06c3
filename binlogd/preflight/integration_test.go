package preflight

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// buildBinlogd builds the real binlogd into a temp dir.
func buildBinlogd(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds binlogd")
	}
	bin := filepath.Join(t.TempDir(), "binlogd")
	out, err := exec.Command("go", "build", "-o", bin, "phxgo/cmd/binlogd").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func runCheck(t *testing.T, bin string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"check"}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return stdout.String(), 0
	case errors.As(err, &ee):
		return stdout.String() + stderr.String(), ee.ExitCode()
	}
	t.Fatalf("run %s: %v", bin, err)
	return "", -1
}

// TestBinlogdCheck runs `binlogd check` on a config with two planted
// problems (a 0644 credentials file, a port another process listens on),
// then with them fixed, then beside a "running binlogd" (this test holding
// the node's wal lock and its port).
func TestBinlogdCheck(t *testing.T) {
	bin := buildBinlogd(t)
	tmp := t.TempDir()
	// t.TempDir's parent is 0700; mariadbd's user must be able to pass it.
	if err := os.Chmod(filepath.Dir(tmp), 0o755); err != nil {
		t.Fatal(err)
	}
	busy, busyAddr := listen(t)
	cred := writeFile(t, filepath.Join(tmp, "cred.json"),
		`{"capture_user":"phxgo_capture","capture_password":"vT3kq9Zr1mX8wL2p","app_user":"app","app_password":"Hn4sB7yQ0cE6uJ5d"}`, 0o644)
	cfgPath := writeFile(t, filepath.Join(tmp, "binlogd.json"), fmt.Sprintf(`{
  "id": 1, "insecure_no_tls": true,
  "dir": "n1", "mysql_dir": "n1/mysql", "credentials_file": "cred.json",
  "repl_addr": %q,
  "members": [{"id": 1, "grpc_addr": %q, "mysql_addr": %q}]
}`, freeAddr(t), busyAddr, freeAddr(t)), 0o644)
	flags := []string{"-config", cfgPath, "-fsync-samples", "5", "-warn-free-gib", "0", "-fail-free-gib", "0", "-fsync-warn-p99", "1h"}

	out, code := runCheck(t, bin, flags...)
	t.Logf("planted problems:\n%s", out)
	if code != 1 {
		t.Fatalf("exit %d, want 1", code)
	}
	for _, want := range []string{
		"FAIL perms credentials_file: " + cred + " has mode 0644",
		"  fix: chmod 600 " + cred + "\n",
		fmt.Sprintf("FAIL port members[0].grpc_addr: %s is in use by pid %d", busyAddr, os.Getpid()),
		fmt.Sprintf("  fix: stop what holds it (kill %d) or set members[0].grpc_addr in %s to a free port\n", os.Getpid(), cfgPath),
		"ok config: ",
		"warn tls: insecure_no_tls is set",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}

	// Fixed: exit 0, and the JSON says the same.
	if err := os.Chmod(cred, 0o600); err != nil {
		t.Fatal(err)
	}
	busy.Close()
	out, code = runCheck(t, bin, append(flags, "-json")...)
	var rep struct {
		Results []Result
		Fail    int
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("-json: %v\n%s", err, out)
	}
	if code != 0 || rep.Fail != 0 {
		t.Fatalf("fixed: exit %d, %d FAIL:\n%s", code, rep.Fail, out)
	}

	// A running binlogd of this node (the wal lock held, its port bound):
	// a warn naming it, not a FAIL.
	cfg := readLenient(cfgPath)
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil { // mysql_dir is inside: mysql must pass
		t.Fatal(err)
	}
	holdWALLock(t, cfg.Dir)
	relisten(t, busyAddr)
	out, code = runCheck(t, bin, flags...)
	if code != 0 || !strings.Contains(out, fmt.Sprintf("warn port members[0].grpc_addr: %s is in use by this node's binlogd (pid %d", busyAddr, os.Getpid())) {
		t.Fatalf("running binlogd: exit %d\n%s", code, out)
	}

	if _, code := runCheck(t, bin); code != 2 {
		t.Fatalf("no -config: exit %d, want 2", code)
	}
	if _, code := runCheck(t, bin, "-config", cfgPath, "-fsync-samples", "0"); code != 2 {
		t.Fatalf("bad flag value: exit %d, want 2", code)
	}
}

func relisten(t *testing.T, addr string) {
	t.Helper()
	l, err := netListen(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
}
