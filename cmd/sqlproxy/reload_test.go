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
	files := mtls.Files{Cert: filepath.Join(dir, "proxy.crt"), Key: filepath.Join(dir, "proxy.key"), CA: filepath.Join(dir, "ca.crt")}
	src := mtls.DirFiles(ca, mtls.Identity{Role: mtls.RoleProxy, ID: 1})
	copyTo(t, src.Cert, files.Cert)
	copyTo(t, src.Key, files.Key)
	copyTo(t, src.CA, files.CA)
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
	await(t, ctx, "the proxy's listen line", func() bool {
		m := regexp.MustCompile(`msg="sqlproxy listening" addr=(\S+)`).FindStringSubmatch(log.String())
		if m != nil {
			addr = m[1]
		}
		return m != nil
	})
	pool := mustLoad(t, files).Pool
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
	if first == nil || first.Cmp(mustLoad(t, files).Leaf.SerialNumber) != 0 {
		t.Fatalf("proxy presented %x, want its file's certificate", first)
	}

	// A new certificate, then SIGHUP.
	next := reissue(t, ca, files)
	hup()
	await(t, ctx, "reloads ok = 1", func() bool { return metric("ok") == "1" })
	if got := handshake(); got.Cmp(next) != 0 {
		t.Fatalf("after SIGHUP a new handshake met %x, want %x", got, next)
	}

	// A broken certificate: refused, the last good one serves.
	writeFile(t, files.Cert, "not a certificate\n")
	hup()
	await(t, ctx, "reloads error = 1", func() bool { return metric("error") == "1" })
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
	reissue(t, ca, files)
	writeFile(t, settings, `{"log_level": "debug"}`)
	hup()
	await(t, ctx, "reloads ok = 2", func() bool { return metric("ok") == "2" })
	handshake()
	await(t, ctx, "a debug line after the reload to debug", func() bool {
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

func await(t *testing.T, ctx context.Context, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s", what)
		case <-time.After(20 * time.Millisecond):
		}
	}
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

func mustLoad(t *testing.T, f mtls.Files) *mtls.Material {
	t.Helper()
	m, err := mtls.Load(f, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// reissue writes a new proxy 1 certificate of the CA in caDir over files.
func reissue(t *testing.T, caDir string, files mtls.Files) *big.Int {
	t.Helper()
	issuer := t.TempDir() // WriteCert refuses to overwrite: issue elsewhere
	for _, f := range []string{mtls.CACertFile, mtls.CAKeyFile} {
		copyTo(t, filepath.Join(caDir, f), filepath.Join(issuer, f))
	}
	crt, key, err := mtls.WriteCert(issuer, mtls.Identity{Role: mtls.RoleProxy, ID: 1}, []string{"127.0.0.1"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	copyTo(t, crt, files.Cert)
	copyTo(t, key, files.Key)
	return mustLoad(t, files).Leaf.SerialNumber
}

func copyTo(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, to, string(b))
}

func writeFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}
