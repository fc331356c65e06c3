package localcluster

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Exited names a node whose binlogd is gone and quotes its log's last
// line; a running one is not listed.
func TestExitedNamesTheDeadProcess(t *testing.T) {
	spec := Spec{Dir: t.TempDir(), Nodes: 2}
	c := Open(spec)
	// node 1: a live process; node 2: one that has exited.
	live := exec.Command("sleep", "60")
	if err := live.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = live.Process.Kill(); _ = live.Wait() })
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	for id, pid := range map[int]int{1: live.Process.Pid, 2: dead.Process.Pid} {
		dir := spec.NodeDir(id)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "binlogd.pid"), []byte(strconv.Itoa(pid)+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	log := "started\nlisten grpc_listen 127.0.0.1:36031: bind: address already in use\n\n"
	if err := os.WriteFile(filepath.Join(spec.NodeDir(2), "binlogd.log"), []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	got := c.Exited()
	if len(got) != 1 || !strings.HasPrefix(got[0], "node 2: binlogd is not running") || !strings.Contains(got[0], "address already in use") {
		t.Fatalf("Exited() = %q, want node 2's binlogd with its last log line", got)
	}
}
