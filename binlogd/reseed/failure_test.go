package reseed

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	pb "phxgo/proto"
)

// TestServeToolFailure: mariadb-backup failing on the source reaches the
// caller with the tool's own words (the tail of its stderr).
func TestServeToolFailure(t *testing.T) {
	if _, err := exec.LookPath("mariadb-backup"); err != nil {
		t.Skip("mariadb-backup not installed")
	}
	dir := t.TempDir()
	src := Source{NodeID: 2, ConfigFile: filepath.Join(dir, "no-such-my.cnf"), Socket: filepath.Join(dir, "none.sock"),
		User: "root", DataDir: dir, TmpDir: filepath.Join(dir, "tmp")}
	var got []*pb.BackupChunk
	err := src.Serve(context.Background(), func(c *pb.BackupChunk) error { got = append(got, c); return nil })
	if err == nil || !strings.Contains(err.Error(), "mariadb-backup on node 2 failed") || !strings.Contains(err.Error(), "no-such-my.cnf") {
		t.Fatalf("err = %v", err)
	}
	if len(got) == 0 || got[0].Info == nil || got[0].Info.SourceNode != 2 {
		t.Fatalf("first chunk %v, want the info", got)
	}
	t.Log(err)
}

// TestReceiveBrokenStream: a stream that breaks half way leaves the old
// datadir as it was and no partial copy behind.
func TestReceiveBrokenStream(t *testing.T) {
	if _, err := exec.LookPath("mbstream"); err != nil {
		t.Skip("mbstream not installed")
	}
	dir := t.TempDir()
	data := filepath.Join(dir, "mysql", "data")
	os.MkdirAll(data, 0o750)
	os.WriteFile(filepath.Join(data, "ibdata1"), []byte("old"), 0o640)
	// A real xbstream of one file, cut in the middle.
	os.WriteFile(filepath.Join(dir, "f"), make([]byte, 1<<16), 0o644)
	cmd := exec.Command("mbstream", "-c", "f")
	cmd.Dir = dir
	stream, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	msgs := []*pb.BackupChunk{{Info: &pb.BackupInfo{SourceNode: 3, EstimatedBytes: uint64(len(stream))}}, {Data: stream[:len(stream)/2]}}
	broken := errors.New("connection reset")
	recv := func() (*pb.BackupChunk, error) {
		if len(msgs) == 0 {
			return nil, broken
		}
		m := msgs[0]
		msgs = msgs[1:]
		return m, nil
	}
	var out strings.Builder
	_, err = Receive(context.Background(), recv, Target{DataDir: data, Progress: &out})
	if !errors.Is(err, broken) {
		t.Fatalf("err = %v, want the stream's", err)
	}
	if b, _ := os.ReadFile(filepath.Join(data, "ibdata1")); string(b) != "old" {
		t.Fatalf("old datadir changed: %q", b)
	}
	left, _ := filepath.Glob(data + ".*")
	if len(left) != 0 {
		t.Fatalf("left behind: %v", left)
	}
	if !strings.Contains(out.String(), "reseed: received 32.") {
		t.Fatalf("no final progress line:\n%s", out.String())
	}
}
