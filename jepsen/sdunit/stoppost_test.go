package sdunit

import (
	"path/filepath"
	"reflect"
	"testing"
)

func TestSplitCommand(t *testing.T) {
	got := splitCommand(`/bin/sh -c '[ "$SERVICE_RESULT" = success ] || exec /x stop-mysql' "a b"  c`)
	want := []string{"/bin/sh", "-c", `[ "$SERVICE_RESULT" = success ] || exec /x stop-mysql`, "a b", "c"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("splitCommand = %q, want %q", got, want)
	}
}

// The shipped binlogd unit keeps MariaDB on a clean stop and stops it
// through ExecStopPost after an unclean one: the test harness must read
// both lines as systemd does.
func TestBinlogdUnitStopLines(t *testing.T) {
	u, err := Parse(filepath.Join("..", "..", "scripts", "systemd", "phxgo-binlogd@.service"), "node1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if u.KillMode != "process" {
		t.Fatalf("KillMode=%s", u.KillMode)
	}
	if len(u.ExecStopPost) != 1 || len(u.ExecStopPost[0]) != 3 || u.ExecStopPost[0][1] != "-c" {
		t.Fatalf("ExecStopPost = %q, want one sh -c line", u.ExecStopPost)
	}
}
