package preflight

import (
	"os"
	"path/filepath"
	"testing"
)

func TestCheckWritableDir(t *testing.T) {
	other := Account{Name: "binlogd", UID: 4343, GID: 4343, Groups: []int{4343}}
	for _, c := range []struct {
		name    string
		setup   func(t *testing.T, base string) string // returns the path checked
		who     Account
		want    Status
		finding string
		fix     string
	}{
		{"exists, owner writes", func(t *testing.T, b string) string { return mkdir(t, b, "d", 0o755, 4343) },
			other, OK, "can write it", ""},
		{"to be created under a writable parent", func(t *testing.T, b string) string {
			return filepath.Join(mkdir(t, b, "p", 0o755, 4343), "a", "b")
		}, other, OK, "can create it", ""},
		{"exists, someone else's", func(t *testing.T, b string) string { return mkdir(t, b, "d", 0o755, 0) },
			other, Fail, "not writable by binlogd", "sudo chown binlogd "},
		{"parent not writable", func(t *testing.T, b string) string { return filepath.Join(mkdir(t, b, "p", 0o755, 0), "d") },
			other, Fail, "cannot create it", "sudo mkdir -p "},
		{"a file", func(t *testing.T, b string) string { return writeFile(t, filepath.Join(b, "f"), "", 0o644) },
			other, Fail, "not a directory", "set dir to a directory"},
		{"root writes anything", func(t *testing.T, b string) string { return mkdir(t, b, "d", 0o700, 4343) },
			Account{Name: "root"}, OK, "can write it", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := c.setup(t, t.TempDir())
			want1(t, []Result{checkWritableDir("dir", p, c.who)}, c.want, c.finding, c.fix)
		})
	}
}

func mkdir(t *testing.T, base, name string, mode os.FileMode, uid int) string {
	t.Helper()
	p := filepath.Join(base, name)
	if err := os.MkdirAll(p, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(p, uid, uid); err != nil {
		t.Skipf("chown needs root: %v", err)
	}
	return p
}

func TestCheckMySQLReach(t *testing.T) {
	env := testEnv(t) // binlogd runs as root, mariadbd as uid 4242
	tmp := t.TempDir()
	// t.TempDir's parent is 0700: a real finding, but not this test's.
	if err := os.Chmod(filepath.Dir(tmp), 0o755); err != nil {
		t.Fatal(err)
	}
	base := mkdir(t, tmp, "srv", 0o755, 0)
	mysqlDir := filepath.Join(base, "n1", "mysql")
	want1(t, checkMySQLReach(env, mysqlDir), OK, "mysql can reach", "")

	mkdir(t, base, "n1", 0o700, 0) // root-only: mysql cannot pass
	want1(t, checkMySQLReach(env, mysqlDir), Warn, "mysql cannot traverse "+filepath.Join(base, "n1"), "sudo chmod o+x "+filepath.Join(base, "n1"))

	mkdir(t, base, "n1", 0o750, 0)
	env.MySQL.Groups = append(env.MySQL.Groups, 0) // mysql in root's group: g+x suffices
	want1(t, checkMySQLReach(env, mysqlDir), OK, "mysql can reach", "")

	env.MySQL = nil
	want1(t, checkMySQLReach(env, mysqlDir), Fail, `"mysql", which does not exist`, "useradd --system")

	env.Runner = Account{Name: "me", UID: 4343} // not root: mariadbd runs as binlogd's user, covered by the dir check
	if rs := checkMySQLReach(env, mysqlDir); len(rs) != 0 {
		t.Fatalf("not root: want nothing, got %+v", rs)
	}
}

func TestCheckSecretFile(t *testing.T) {
	me := Account{Name: "root", UID: os.Geteuid()}
	d := t.TempDir()
	for _, c := range []struct {
		name    string
		mode    os.FileMode
		uid     int
		want    Status
		finding string
		fix     string
	}{
		{"0600 mine", 0o600, me.UID, OK, "is 0600 and owned by root", ""},
		{"0400 mine", 0o400, me.UID, OK, "is 0400", ""},
		{"0644", 0o644, me.UID, Fail, "has mode 0644", "chmod 600 "},
		{"0640", 0o640, me.UID, Fail, "has mode 0640", "chmod 600 "},
		{"someone else's", 0o600, 4242, Fail, "owned by uid 4242, not by root", "sudo chown root "},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := writeFile(t, filepath.Join(d, c.name), "{}", c.mode)
			if err := os.Chown(p, c.uid, c.uid); err != nil {
				t.Skipf("chown needs root: %v", err)
			}
			want1(t, []Result{checkSecretFile("perms credentials_file", p, me)}, c.want, c.finding, c.fix)
		})
	}
	want1(t, []Result{checkSecretFile("perms credentials_file", filepath.Join(d, "missing"), me)}, Fail, "no such file", "create it (mode 0600")
}
