package sdnotify

import (
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// listen opens a datagram socket standing in for systemd's.
func listen(t *testing.T) (*net.UnixConn, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "notify.sock")
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, path
}

func TestReadySendsOneDatagram(t *testing.T) {
	c, path := listen(t)
	t.Setenv("NOTIFY_SOCKET", path)
	n := FromEnv()
	if !n.Enabled() {
		t.Fatal("not enabled with NOTIFY_SOCKET set")
	}
	if err := n.Ready("master, epoch 3\nsecond line"); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	k, err := c.Read(buf)
	if err != nil {
		t.Fatal(err)
	}
	got := string(buf[:k])
	if got != "READY=1\nSTATUS=master, epoch 3 second line\n" {
		t.Fatalf("datagram %q", got)
	}
}

func TestWithoutSocketIsNoop(t *testing.T) {
	t.Setenv("NOTIFY_SOCKET", "")
	n := FromEnv()
	if n.Enabled() {
		t.Fatal("enabled without NOTIFY_SOCKET")
	}
	if err := n.Ready("x"); err != nil {
		t.Fatal(err)
	}
}

func TestRefusesNewlineInLine(t *testing.T) {
	_, path := listen(t)
	t.Setenv("NOTIFY_SOCKET", path)
	if err := FromEnv().Notify("A=1\nREADY=1"); err == nil || !strings.Contains(err.Error(), "newline") {
		t.Fatalf("err = %v, want a newline refusal", err)
	}
}
