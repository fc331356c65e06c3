package mysqld

import (
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// binlogd run by an OS user other than root: mariadbd runs as that user
// and the admin account is <user>@localhost by unix_socket, on a fresh
// datadir and on one made the old way (passwordless root). The tests are
// re-run as "nobody" from a copy of this test binary.
func TestAsAnotherOSUser(t *testing.T) {
	if os.Geteuid() != 0 || os.Getenv("PHXGO_AS_OTHER_USER") != "" {
		t.Skip("needs root to switch to another OS user")
	}
	u, err := user.Lookup("nobody")
	if err != nil {
		t.Skip("no OS user nobody")
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	dir := t.TempDir()
	if err := os.Chown(dir, uid, gid); err != nil {
		t.Fatal(err)
	}
	inst := &Instance{opts: Options{Dir: filepath.Join(dir, "x"), Logger: slog.Default()}}
	if err := inst.allowTraverse(&osUser{name: u.Username, uid: uid, gid: gid}); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "mysqld.test")
	if err := copyFile(os.Args[0], bin); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run", "^(TestStartWriteKillRestart|TestNoPasswordlessLoginOverTCP|TestLegacyDatadirRepaired)$", "-test.v")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TMPDIR="+dir, "HOME="+dir, "PHXGO_AS_OTHER_USER=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
	out, err := cmd.CombinedOutput()
	if err != nil || strings.Count(string(out), "--- PASS") != 3 {
		t.Fatalf("as %s: %v\n%s", u.Username, err, out)
	}
	t.Logf("as %s: 3 tests pass (admin %s@localhost, mariadbd as %s)", u.Username, u.Username, u.Username)
}

func copyFile(from, to string) error {
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		return err
	}
	return dst.Close()
}
