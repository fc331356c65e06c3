package main

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"phxgo/binlogd/config"
	"phxgo/binlogd/mtls"
	"phxgo/jepsen/sdunit"
)

// TestMain points init's default data root (-dir, -mysql-dir) at a temp
// dir: a test that leaves them out must not read this host's
// /var/lib/phxgo (checkFresh looks for a Paxos log there).
func TestMain(m *testing.M) {
	root, err := os.MkdirTemp("", "phxgo-init-root-")
	if err != nil {
		panic(err)
	}
	initDataRoot = root
	code := m.Run()
	os.RemoveAll(root)
	os.Exit(code)
}

// The defaults follow the temp root, and a Paxos log there is found: the
// check reads the defaults, and only the temp dir.
func TestInitDefaultDirsUseTheDataRoot(t *testing.T) {
	noDial(t)
	if initDataRoot == "/var/lib/phxgo" {
		t.Fatal("tests run against the real /var/lib/phxgo")
	}
	paxosDir := filepath.Join(initDataRoot, "node2", "binlogd", "paxos")
	if err := os.MkdirAll(paxosDir, 0o755); err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(filepath.Join(initDataRoot, "node2"))
	if err := os.WriteFile(filepath.Join(paxosDir, "MANIFEST"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := initArgs(t, "-out", filepath.Join(t.TempDir(), "o"), "-hosts", "10.0.0.1,10.0.0.2,10.0.0.3")
	if err == nil || !strings.Contains(err.Error(), paxosDir) {
		t.Fatalf("init over a default dir holding a Paxos log: %v", err)
	}
}

// noDial makes any connection init tries fail the test.
func noDial(t *testing.T) *atomic.Int32 {
	t.Helper()
	var n atomic.Int32
	old := initProbeDial
	initProbeDial = func(ctx context.Context, addr string) (net.Conn, error) {
		n.Add(1)
		return nil, errors.New("test: no dial")
	}
	t.Cleanup(func() { initProbeDial = old })
	return &n
}

// initArgs runs `binlogd init ARGS` in-process, as main would.
func initArgs(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out strings.Builder
	o, err := parseInit(args, io.Discard)
	if err != nil {
		return "", err
	}
	err = runInit(o, &out)
	return out.String(), err
}

// checkInitOut loads every node's binlogd.json as binlogd run would
// (validation, TLS files) and checks what else each node needs.
func checkInitOut(t *testing.T, out string, ids ...uint32) []*config.Config {
	t.Helper()
	var cfgs []*config.Config
	for _, id := range ids {
		dir := filepath.Join(out, "node"+itoa(id))
		c, err := config.Load(filepath.Join(dir, "binlogd.json"))
		if err != nil {
			t.Fatalf("node %d: %v", id, err)
		}
		m, err := c.TLS()
		if err != nil || m == nil {
			t.Fatalf("node %d: TLS: %v", id, err)
		}
		if got, err := mtls.IdentityOf(m.Leaf); err != nil || got != (mtls.Identity{Role: mtls.RoleNode, ID: id}) {
			t.Fatalf("node %d: certificate identity %v, %v", id, got, err)
		}
		if _, err := c.LoadCredentials(); err != nil {
			t.Fatalf("node %d: %v", id, err)
		}
		for _, f := range []string{"node" + itoa(id) + ".key", "credentials.json", "proxy-password"} {
			if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Mode().Perm() != 0o600 {
				t.Fatalf("node %d: %s: %v %v, want mode 0600", id, f, st.Mode(), err)
			}
		}
		if _, err := os.Stat(filepath.Join(dir, mtls.CAKeyFile)); err == nil {
			t.Fatalf("node %d's dir holds the CA key", id)
		}
		pf := mtls.DirFiles(dir, mtls.Identity{Role: mtls.RoleProxy, ID: id})
		pm, err := mtls.Load(pf, time.Now())
		if err != nil {
			t.Fatalf("node %d: proxy certificate: %v", id, err)
		}
		if got, _ := mtls.IdentityOf(pm.Leaf); got != (mtls.Identity{Role: mtls.RoleProxy, ID: id}) {
			t.Fatalf("node %d: proxy certificate is %v", id, got)
		}
		env := readEnv(t, filepath.Join(dir, "sqlproxy.env"))
		if !sameOrLocal(env["LISTEN"], c.Self().ProxyAddr) || !sameOrLocal(env["BINLOGD"], c.Self().GRPCAddr) || env["HTTP"] == "" {
			t.Fatalf("node %d: sqlproxy.env %v vs member %+v", id, env, c.Self())
		}
		cfgs = append(cfgs, c)
	}
	am, err := mtls.Load(mtls.DirFiles(out, mtls.Identity{Role: mtls.RoleAdmin}), time.Now())
	if err != nil {
		t.Fatalf("admin certificate: %v", err)
	}
	if got, _ := mtls.IdentityOf(am.Leaf); got.Role != mtls.RoleAdmin {
		t.Fatalf("admin certificate is %v", got)
	}
	return cfgs
}

// sameOrLocal: got is want, or want's port on a wildcard or loopback
// host (-listen-any).
func sameOrLocal(got, want string) bool {
	gh, gp, _ := net.SplitHostPort(got)
	_, wp, _ := net.SplitHostPort(want)
	ip := net.ParseIP(gh)
	return got == want || gp == wp && ip != nil && (ip.IsUnspecified() || ip.IsLoopback())
}

func itoa(id uint32) string { return strconv.Itoa(int(id)) }

// readEnv reads a systemd EnvironmentFile as systemd does (sdunit).
func readEnv(t *testing.T, path string) map[string]string {
	t.Helper()
	env, err := sdunit.ReadEnvFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return env
}

// The case: three hosts, documentation addresses that must never
// be dialled. Every node's config loads as binlogd run loads it.
func TestInitHostsWritesLoadableNodes(t *testing.T) {
	dials := noDial(t)
	out := filepath.Join(t.TempDir(), "phxgo-init")
	stdout, err := initArgs(t, "-out", out, "-hosts", "10.0.0.1,10.0.0.2,10.0.0.3")
	if err != nil {
		t.Fatal(err)
	}
	cfgs := checkInitOut(t, out, 1, 2, 3)
	for i, c := range cfgs {
		if c.ReplAddr != "127.0.0.1:17012" || c.GRPCListenAddr() != c.Self().GRPCAddr || len(c.Members) != 3 {
			t.Fatalf("node %d: repl %s, grpc listen %s, %d members", i+1, c.ReplAddr, c.GRPCListenAddr(), len(c.Members))
		}
		for _, m := range c.Members {
			if m.LegacyReplAddr != "" {
				t.Fatalf("node %d: members[] carries repl_addr", i+1)
			}
		}
	}
	if n := dials.Load(); n != 0 {
		t.Fatalf("init without -probe dialled %d times", n)
	}
	for _, want := range []string{"ca.key", "admin.crt", "next steps", "phxgo-binlogd@node<id>"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output does not mention %q:\n%s", want, stdout)
		}
	}
	// A second run into the same dir refuses rather than replacing the CA.
	if _, err := initArgs(t, "-out", out, "-hosts", "10.0.0.1,10.0.0.2,10.0.0.3"); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Fatalf("second init into %s: %v", out, err)
	}
}

// -probe asks each node's address; something answering there refuses.
func TestInitProbe(t *testing.T) {
	var n atomic.Int32
	old := initProbeDial
	initProbeDial = func(ctx context.Context, addr string) (net.Conn, error) {
		n.Add(1)
		return nil, errors.New("connection refused (test)")
	}
	if _, err := initArgs(t, "-probe", "-out", t.TempDir(), "-hosts", "10.0.0.1,10.0.0.2,10.0.0.3"); err != nil || n.Load() != 3 {
		t.Fatalf("probe of 3 free nodes: %v, %d dials", err, n.Load())
	}
	initProbeDial = old
	t.Cleanup(func() { initProbeDial = old })
	// A server on node 2's loopback address (not a binlogd).
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	_, port, _ := net.SplitHostPort(l.Addr().String())
	out := t.TempDir()
	_, err = initArgs(t, "-probe", "-out", out,
		"-node", "1=127.0.0.2:"+port+",127.0.0.2:3306",
		"-node", "2=127.0.0.1:"+port+",127.0.0.1:3306",
		"-node", "3=127.0.0.3:"+port+",127.0.0.3:3306")
	if err == nil || !strings.Contains(err.Error(), "node 2") || !strings.Contains(err.Error(), "already answers") {
		t.Fatalf("probe over a listening port: %v", err)
	}
	if ents, _ := os.ReadDir(out); len(ents) != 0 {
		t.Fatalf("a refused init wrote %d files", len(ents))
	}
}

// The older -member form still works: REPL is the node's own repl_addr
// (identical loopback entries are fine); a remote one is refused.
func TestInitMemberForm(t *testing.T) {
	noDial(t)
	out := filepath.Join(t.TempDir(), "o")
	if _, err := initArgs(t, "-out", out,
		"-member", "1=10.0.0.1:17011,10.0.0.1:3306,127.0.0.1:17012,10.0.0.1:3307",
		"-member", "2=10.0.0.2:17011,10.0.0.2:3306,127.0.0.1:17012,10.0.0.2:3307",
		"-member", "3=10.0.0.3:17011,10.0.0.3:3306,127.0.0.1:17012,10.0.0.3:3307"); err != nil {
		t.Fatal(err)
	}
	checkInitOut(t, out, 1, 2, 3)
	_, err := initArgs(t, "-out", filepath.Join(t.TempDir(), "o"),
		"-member", "1=10.0.0.1:17011,10.0.0.1:3306,10.0.0.1:17012,10.0.0.1:3307",
		"-member", "2=10.0.0.2:17011,10.0.0.2:3306,10.0.0.2:17012,10.0.0.2:3307",
		"-member", "3=10.0.0.3:17011,10.0.0.3:3306,10.0.0.3:17012,10.0.0.3:3307")
	var ue usageErr
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), `"repl_addr"`) || !strings.Contains(err.Error(), "loopback") {
		t.Fatalf("remote REPL in -member: %v", err)
	}
}

func TestInitUsageErrors(t *testing.T) {
	noDial(t)
	for _, args := range [][]string{
		{},
		{"-hosts", "10.0.0.1,10.0.0.2"},
		{"-hosts", "10.0.0.1,,10.0.0.3"},
		{"-hosts", "10.0.0.1", "-node", "2=10.0.0.2:1,10.0.0.2:2"},
		{"-node", "1=10.0.0.1:17011"},
		{"-hosts", "a,b,c", "extra"},
		{"-hosts", "a,b,c", "-dir", "/var/lib/my data/{id}"},
		{"-node", "1=10.0.0.1:1,10.0.0.1:2", "-node", "2=10.0.0.1:1,10.0.0.2:2", "-node", "3=10.0.0.3:1,10.0.0.3:2"},
	} {
		o, err := parseInit(append([]string{"-out", t.TempDir()}, args...), io.Discard)
		if err == nil {
			err = runInit(o, io.Discard)
		}
		var ue usageErr
		if err == nil || (!errors.As(err, &ue) && !strings.Contains(err.Error(), "flag")) {
			t.Errorf("%q: want a usage error, got %v", args, err)
		}
	}
}

// readmeInitExamples are the `bin/binlogd init` commands in README.md's
// indented code blocks, continuation lines joined.
func readmeInitExamples(t *testing.T) [][]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var cmds [][]string
	var cur string
	for _, line := range strings.Split(string(b), "\n") {
		l := strings.TrimSpace(line)
		if cur == "" && !(strings.HasPrefix(line, "    ") && strings.HasPrefix(l, "bin/binlogd init ")) {
			continue
		}
		cur += " " + strings.TrimSuffix(l, "\\")
		if !strings.HasSuffix(l, "\\") {
			cmds = append(cmds, strings.Fields(cur)[2:])
			cur = ""
		}
	}
	return cmds
}

// The README's init examples run as written (in a scratch directory:
// their -out is relative) and write configs that load.
func TestReadmeInitExamples(t *testing.T) {
	dials := noDial(t)
	cmds := readmeInitExamples(t)
	if len(cmds) < 2 {
		t.Fatalf("found %d `bin/binlogd init` examples in README.md, want the multi-host ones", len(cmds))
	}
	t.Chdir(t.TempDir())
	for _, args := range cmds {
		if _, err := initArgs(t, args...); err != nil {
			t.Fatalf("README example %q: %v", args, err)
		}
		o, _ := parseInit(args, io.Discard)
		var ids []uint32
		for _, n := range o.nodes {
			ids = append(ids, n.id)
		}
		checkInitOut(t, o.out, ids...)
	}
	if dials.Load() != 0 {
		t.Fatalf("README examples dialled %d times", dials.Load())
	}
}

// At the system-call level: the built binary, run under strace, makes no
// inet connect() at all without -probe.
func TestInitBinaryConnectsNowhere(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	strace, err := exec.LookPath("strace")
	if err != nil {
		t.Skip("strace not installed")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "binlogd")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	trace := filepath.Join(dir, "trace")
	out, err := exec.Command(strace, "-f", "-qq", "-e", "trace=connect,sendto,sendmsg", "-o", trace,
		bin, "init", "-out", filepath.Join(dir, "out"), "-hosts", "10.0.0.1,10.0.0.2,10.0.0.3").CombinedOutput()
	if err != nil {
		t.Skipf("strace cannot trace here: %v\n%s", err, out)
	}
	b, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.Contains(line, "AF_INET") {
			t.Errorf("init without -probe sent: %s", line)
		}
	}
	if _, err := config.Load(filepath.Join(dir, "out", "node2", "binlogd.json")); err != nil {
		t.Fatal(err)
	}
}

// Three nodes on one host (one loopback IP, distinct advertised ports):
// their node-local listeners get distinct ports; -credentials is copied
// to every node as it is.
func TestInitSharedHostAndCredentials(t *testing.T) {
	noDial(t)
	dir := t.TempDir()
	cred := config.Credentials{CaptureUser: "cap", CapturePassword: "c-pw", AppUser: "app", AppPassword: "a-pw", ProxyUser: "phxgo_proxy", ProxyPassword: "p-pw"}
	credPath := filepath.Join(dir, "cred.json")
	if err := config.SaveCredentials(credPath, cred); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "o")
	if _, err := initArgs(t, "-out", out, "-credentials", credPath,
		"-node", "1=127.0.0.1:17011,127.0.0.1:17010,127.0.0.1:17013",
		"-node", "2=127.0.0.1:17021,127.0.0.1:17020,127.0.0.1:17023",
		"-node", "3=127.0.0.1:17031,127.0.0.1:17030,127.0.0.1:17033"); err != nil {
		t.Fatal(err)
	}
	cfgs := checkInitOut(t, out, 1, 2, 3)
	for i, c := range cfgs {
		wantRepl := "127.0.0.1:" + strconv.Itoa(17012+i)
		env := readEnv(t, filepath.Join(out, "node"+itoa(c.ID), "sqlproxy.env"))
		if c.ReplAddr != wantRepl || env["HTTP"] != "127.0.0.1:"+strconv.Itoa(9307+i) {
			t.Errorf("node %d: repl_addr %s (want %s), proxy http %s", c.ID, c.ReplAddr, wantRepl, env["HTTP"])
		}
		if got, err := c.LoadCredentials(); err != nil || got.AppPassword != "a-pw" || got.ProxyPassword != "p-pw" {
			t.Errorf("node %d: credentials %+v, %v", c.ID, got, err)
		}
		if b, _ := os.ReadFile(filepath.Join(out, "node"+itoa(c.ID), "proxy-password")); string(b) != "p-pw\n" {
			t.Errorf("node %d: proxy-password %q", c.ID, b)
		}
	}
}
