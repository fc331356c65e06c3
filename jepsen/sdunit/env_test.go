package sdunit

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestSqlproxyUnitExpandsItsEnvironmentFile parses the shipped sqlproxy
// unit with an sqlproxy.env as binlogd init writes it and checks the
// command line systemd would run: ${X} one argument, $EXTRA_FLAGS split.
func TestSqlproxyUnitExpandsItsEnvironmentFile(t *testing.T) {
	etc := t.TempDir()
	if err := os.Mkdir(filepath.Join(etc, "node2"), 0o755); err != nil {
		t.Fatal(err)
	}
	env := "# comment\nLISTEN=10.0.0.2:3307\nBINLOGD=10.0.0.2:17011\nHTTP=127.0.0.1:9307\nEXTRA_FLAGS=\"-tls-cert /e/p.crt -allow 10.0.0.0/8\"\n"
	if err := os.WriteFile(filepath.Join(etc, "node2", "sqlproxy.env"), []byte(env), 0o644); err != nil {
		t.Fatal(err)
	}
	u, err := Parse(filepath.Join("..", "..", "scripts", "systemd", "phxgo-sqlproxy@.service"), "node2",
		map[string]string{"/etc/phxgo/": etc + "/", "/usr/local/bin/": "/bin/"})
	if err != nil {
		t.Fatal(err)
	}
	vars, err := u.environment()
	if err != nil {
		t.Fatal(err)
	}
	got := expand(u.ExecStart, vars)
	want := []string{"/bin/sqlproxy", "-listen", "10.0.0.2:3307", "-binlogd", "10.0.0.2:17011", "-admin-user", "phxgo_proxy",
		"-admin-password-file", filepath.Join(etc, "node2", "proxy-password"), "-http", "127.0.0.1:9307",
		"-tls-cert", "/e/p.crt", "-allow", "10.0.0.0/8"}
	if !slices.Equal(got, want) {
		t.Fatalf("ExecStart expands to\n%q\nwant\n%q", got, want)
	}
	if got := expand([]string{"$EMPTY", "a${EMPTY}b"}, map[string]string{}); !slices.Equal(got, []string{"ab"}) {
		t.Fatalf("empty variables: %q", got)
	}
	u.EnvironmentFiles = append(u.EnvironmentFiles, "-/nonexistent/x.env")
	if _, err := u.environment(); err != nil {
		t.Fatalf("an optional missing EnvironmentFile: %v", err)
	}
	u.EnvironmentFiles = append(u.EnvironmentFiles, "/nonexistent/x.env")
	if _, err := u.environment(); err == nil {
		t.Fatal("a missing EnvironmentFile without '-' is no error")
	}
}
