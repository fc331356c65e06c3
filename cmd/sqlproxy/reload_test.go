package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"phxgo/binlogd/mtls"
	"phxgo/binlogd/mtls/mtlstest"
	"phxgo/internal/testkit"
)

// TestMain lets the test binary run as sqlproxy itself (a real process
// that gets real signals) without a separate build.
func TestMain(m *testing.M) {
	if os.Getenv("PHXGO_TEST_RUN_SQLPROXY") == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestSIGHUP runs sqlproxy as a process and reloads it with SIGHUP, as
// systemd's ExecReload does: a new certificate reaches new client
// handshakes, a broken one is refused (logged, counted) while the last
// good one serves, and the settings file's log level takes effect.
// Needs no MariaDB or binlogd: the TLS handshake comes before the login,
// and root is refused by name.
func TestSIGHUP(t *testing.T) {
	ca := mtlstest.MakeCA(t, 1)
	dir := t.TempDir()
	files := mtlstest.OwnCopy(t, mtls.DirFiles(ca, mtls.Identity{Role: mtls.RoleProxy, ID: 1}))
	pw, settings := filepath.Join(dir, "pw"), filepath.Join(dir, "sqlproxy.json")
	writeFile(t, pw, "x\n")
	writeFile(t, settings, `{"log_level": "info"}`)
	httpAddr := freeAddr(t)

	cmd := exec.Command(os.Args[0], "-listen", "127.0.0.1:0", "-binlogd", "127.0.0.1:1", "-http", httpAddr,
		"-admin-password-file", pw, "-tls-cert", files.Cert, "-tls-key", files.Key, "-tls-ca", files.CA,
		"-settings", settings, "-v", "-procs", "1")
	cmd.Env = append(os.Environ(), "PHXGO_TEST_RUN_SQLPROXY=1")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	log := &logLines{}
	go log.read(stderr)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var addr string
	testkit.Await(t, ctx, "the proxy's listen line", func() bool {
		m := regexp.MustCompile(`msg="sqlproxy listening" addr=(\S+)`).FindStringSubmatch(log.String())
		if m != nil {
			addr = m[1]
		}
		return m != nil
	})
	pool := mtlstest.Load(t, files).Pool
	// handshake makes a TLS handshake with the proxy (as root, refused
	// by name after it) and returns the serial the proxy presented.
	handshake := func() *big.Int {
		var serial *big.Int
		cfg := mysql.NewConfig()
		cfg.User, cfg.Net, cfg.Addr, cfg.Timeout = "root", "tcp", addr, 5*time.Second
		cfg.TLS = &tls.Config{RootCAs: pool, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12,
			VerifyConnection: func(cs tls.ConnectionState) error { serial = cs.PeerCertificates[0].SerialNumber; return nil }}
		c, err := mysql.NewConnector(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Connect(ctx); err == nil {
			t.Fatal("root logged in through the proxy")
		}
		return serial
	}
	hup := func() {
		if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
	}
	metric := func(result string) string {
		resp, err := http.Get("http://" + httpAddr + "/metrics")
		if err != nil {
			return ""
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		m := regexp.MustCompile(fmt.Sprintf(`(?m)^phxgo_sqlproxy_reloads_total\{result="%s"\} (\S+)$`, result)).FindSubmatch(b)
		if m == nil {
			return ""
		}
		return string(m[1])
	}

	first := handshake()
	if first == nil || first.Cmp(mtlstest.Load(t, files).Leaf.SerialNumber) != 0 {
		t.Fatalf("proxy presented %x, want its file's certificate", first)
	}

	// A new certificate, then SIGHUP.
	next := mtlstest.Reissue(t, ca, mtls.Identity{Role: mtls.RoleProxy, ID: 1}, files)
	hup()
	testkit.Await(t, ctx, "reloads ok = 1", func() bool { return metric("ok") == "1" })
	if got := handshake(); got.Cmp(next) != 0 {
		t.Fatalf("after SIGHUP a new handshake met %x, want %x", got, next)
	}

	// A broken certificate: refused, the last good one serves.
	writeFile(t, files.Cert, "not a certificate\n")
	hup()
	testkit.Await(t, ctx, "reloads error = 1", func() bool { return metric("error") == "1" })
	if !strings.Contains(log.String(), "reload refused") || !strings.Contains(log.String(), files.Cert) {
		t.Fatalf("refusal not logged with the file:\n%s", log.String())
	}
	if got := handshake(); got.Cmp(next) != 0 {
		t.Fatalf("after a refused reload a new handshake met %x, want the last good %x", got, next)
	}

	// Three denied logins so far, long answered: no debug line, as the
	// settings file's log_level info overrides -v.
	if strings.Contains(log.String(), "login failed") {
		t.Fatalf("a debug line at level info:\n%s", log.String())
	}
	// A good certificate again and log_level debug: the denied login's
	// debug line appears.
	mtlstest.Reissue(t, ca, mtls.Identity{Role: mtls.RoleProxy, ID: 1}, files)
	writeFile(t, settings, `{"log_level": "debug"}`)
	hup()
	testkit.Await(t, ctx, "reloads ok = 2", func() bool { return metric("ok") == "2" })
	handshake()
	testkit.Await(t, ctx, "a debug line after the reload to debug", func() bool {
		return strings.Contains(log.String(), `level=DEBUG msg="sqlproxy: login failed"`)
	})
}

// logLines collects a process's stderr.
type logLines struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logLines) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		l.mu.Lock()
		l.b.WriteString(sc.Text() + "\n")
		l.mu.Unlock()
	}
}

func (l *logLines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// freeAddr is a loopback address nothing listens on now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func writeFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}
