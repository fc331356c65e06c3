package sqlproxy

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"phxgo/sqlproxy/wire"
)

// TestAttackMemory is the attack on a real bin/sqlproxy process (built
// from this tree; PHXGO_ATTACK_BIN measures another build instead, e.g.
// an older one, and only logs): strangers that announce huge packets
// before login, strangers holding every slot, a root login. The proxy's
// memory is read from /proc/<pid>/status (VmRSS, VmHWM = peak RSS).
// Needs no MariaDB or binlogd: all of it happens before a backend is
// asked.
func TestAttackMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs bin/sqlproxy; skipped in -short")
	}
	bin, assert := os.Getenv("PHXGO_ATTACK_BIN"), false
	if bin == "" {
		bin, assert = filepath.Join(t.TempDir(), "sqlproxy"), true
		out, err := exec.Command("go", "build", "-o", bin, "phxgo/cmd/sqlproxy").CombinedOutput()
		if err != nil {
			t.Fatalf("go build: %v\n%s", err, out)
		}
	}
	const conns = 50
	pw := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(pw, []byte("x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"-listen", "127.0.0.1:0", "-binlogd", "127.0.0.1:1", "-http", "", "-admin-password-file", pw, "-procs", "1"}
	if help, _ := exec.Command(bin, "-h").CombinedOutput(); strings.Contains(string(help), "-insecure") {
		args = append(args, "-insecure") // no TLS material: the hop is not under test
	}
	if assert {
		args = append(args, "-max-connections", strconv.Itoa(conns), "-connect-timeout", "60s")
	}
	cmd := exec.Command(bin, args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	addr := listenAddr(t, stderr)
	pid := cmd.Process.Pid
	mem := func() (rss, hwm int) { return procStatusKB(t, pid, "VmRSS"), procStatusKB(t, pid, "VmHWM") }
	base, _ := mem()
	t.Logf("proxy %s pid %d: VmRSS at start %d KiB", bin, pid, base)

	// Root is refused by name, before any backend is asked.
	if assert {
		cfg := mysql.NewConfig()
		cfg.User, cfg.Net, cfg.Addr, cfg.Timeout = "root", "tcp", addr, 5*time.Second
		c, _ := mysql.NewConnector(cfg)
		_, err := c.Connect(context.Background())
		if me := mysqlErr(t, err); me.Number != 1045 {
			t.Fatalf("root: %v", me)
		}
	}

	// 50 strangers each announce a 16 MiB packet and send nothing more.
	hold := func(hdr [4]byte) []net.Conn {
		var out []net.Conn
		for range conns {
			nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { nc.Close() })
			if _, err := wire.NewConn(nc).ReadPacket(); err != nil { // greeting
				t.Fatal(err)
			}
			if _, err := nc.Write(hdr[:]); err != nil {
				t.Fatal(err)
			}
			out = append(out, nc)
		}
		return out
	}
	held := hold([4]byte{0xff, 0xff, 0xff, 1})
	time.Sleep(500 * time.Millisecond) // give a vulnerable build time to allocate; nothing to await there
	rss, hwm := mem()
	t.Logf("%d × 16 MiB headers before login: VmRSS %d KiB (+%d), VmHWM %d KiB", conns, rss, rss-base, hwm)
	if assert {
		if hwm-base > 64<<10 {
			t.Fatalf("16 MiB headers cost %d KiB (peak), want < 64 MiB", hwm-base)
		}
		for _, nc := range held { // each got 1153 and was closed
			c := wire.NewConn(nc)
			_ = nc.SetReadDeadline(time.Now().Add(10 * time.Second))
			p, err := c.ReadPacket()
			if err != nil || wire.ParseError(p).Code != 1153 {
				t.Fatalf("16 MiB header: %x %v", p, err)
			}
		}
	}
	for _, nc := range held {
		nc.Close()
	}

	// 50 strangers each announce a packet just under the pre-login bound
	// and hold it open: they wait (LoginTimeout) and fill every slot.
	n := wire.MaxHandshakePacket
	if !assert {
		n = 16<<20 - 1
	}
	waitSlots(t, addr, assert)
	held = hold([4]byte{byte(n), byte(n >> 8), byte(n >> 16), 1})
	time.Sleep(500 * time.Millisecond)
	rss, hwm = mem()
	t.Logf("%d × %d-byte headers held before login: VmRSS %d KiB (+%d), VmHWM %d KiB", conns, n, rss, rss-base, hwm)
	if !assert {
		return
	}
	if hwm-base > 64<<10 {
		t.Fatalf("held strangers cost %d KiB (peak), want < 64 MiB", hwm-base)
	}
	// One more: the strangers do not hold the slots. The newcomer gets a
	// greeting, and the oldest stranger is closed to make room.
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	_ = nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	p, err := wire.NewConn(nc).ReadPacket()
	if err != nil || len(p) == 0 || p[0] != 10 {
		t.Fatalf("over the cap of strangers: %q %v, want a greeting", p, err)
	}
	_ = held[0].SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := held[0].Read(make([]byte, 1)); err == nil || os.IsTimeout(err) {
		t.Fatalf("the oldest stranger still holds its slot: %v", err)
	}
}

// waitSlots waits until the proxy accepts a login attempt again (the
// previous strangers' slots freed): a connection gets a greeting.
func waitSlots(t *testing.T, addr string, assert bool) {
	t.Helper()
	if !assert {
		return
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		_ = nc.SetReadDeadline(time.Now().Add(5 * time.Second))
		p, err := wire.NewConn(nc).ReadPacket()
		nc.Close()
		if err == nil && len(p) > 0 && p[0] == 10 {
			// This probe's own slot frees when the proxy sees it closed.
			time.Sleep(100 * time.Millisecond)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("slots not freed: %q %v", p, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

var listenRe = regexp.MustCompile(`msg="sqlproxy listening" addr=(\S+)`)

// listenAddr reads the proxy's log until it says where it listens; the
// rest of the log is copied to the test log.
func listenAddr(t *testing.T, r interface{ Read([]byte) (int, error) }) string {
	t.Helper()
	sc := bufio.NewScanner(r)
	found := make(chan string, 1)
	go func() {
		for sc.Scan() {
			if m := listenRe.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
			}
		}
	}()
	select {
	case a := <-found:
		return a
	case <-time.After(30 * time.Second):
		t.Fatal("sqlproxy did not say where it listens")
	}
	return ""
}

// procStatusKB reads one "Key: N kB" line of /proc/<pid>/status.
func procStatusKB(t *testing.T, pid int, key string) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, key+":"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no %s in /proc/%d/status", key, pid)
	return 0
}
