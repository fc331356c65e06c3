package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func write(t *testing.T, dir, name, body string, mode os.FileMode) string {
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), mode); err != nil {
		t.Fatal(err)
	}
	return p
}

// loadBody loads body as a config file c.json in a new directory.
func loadBody(t *testing.T, body string) (*Config, error) {
	t.Helper()
	return Load(write(t, t.TempDir(), "c.json", body, 0o644))
}

// good runs without TLS on purpose (insecure_no_tls): most tests here are
// about other keys; security_test.go swaps it for tls_* keys.
const good = `{"id":1,"insecure_no_tls":true,"dir":"n1","mysql_dir":"n1/mysql","credentials_file":"cred.json",
 "members":[
  {"id":1,"grpc_addr":"127.0.0.1:1","mysql_addr":"127.0.0.1:2","repl_addr":"127.0.0.1:3"},
  {"id":2,"grpc_addr":"127.0.0.1:4","mysql_addr":"127.0.0.1:5","repl_addr":"127.0.0.1:6"},
  {"id":3,"grpc_addr":"127.0.0.1:7","mysql_addr":"127.0.0.1:8","repl_addr":"127.0.0.1:9"}]}`

func TestLoadGoodAndDefaults(t *testing.T) {
	dir := t.TempDir()
	c, err := Load(write(t, dir, "c.json", good, 0o644))
	if err != nil {
		t.Fatal(err)
	}
	if c.LogRetention.Hours() != 24 || c.LogRetentionBytes != 1<<30 {
		t.Fatalf("retention defaults: %v, %d bytes", c.LogRetention, c.LogRetentionBytes)
	}
	if c.LeaseDuration.Seconds() != 5 || c.Dir != filepath.Join(dir, "n1") || len(c.Peers()) != 3 {
		t.Fatalf("%+v", c)
	}
	if !c.Thrifty() {
		t.Fatal("paxos_thrifty defaults to false, want true")
	}
	off, err := Load(write(t, dir, "off.json", strings.Replace(good, `"id":1,`, `"id":1,"paxos_thrifty":false,`, 1), 0o644))
	if err != nil {
		t.Fatal(err)
	}
	if off.Thrifty() {
		t.Fatal(`"paxos_thrifty":false loaded as true`)
	}
	if !c.UseIOURing() {
		t.Fatal("wal_io_uring defaults to false, want true")
	}
	plain, err := Load(write(t, dir, "plain.json", strings.Replace(good, `"id":1,`, `"id":1,"wal_io_uring":false,`, 1), 0o644))
	if err != nil {
		t.Fatal(err)
	}
	if plain.UseIOURing() {
		t.Fatal(`"wal_io_uring":false loaded as true`)
	}
	if w := c.GroupCommitWaitOrDefault(); w != DefaultGroupCommitWait {
		t.Fatalf("group_commit_wait defaults to %v, want %v", w, DefaultGroupCommitWait)
	}
	noWait, err := Load(write(t, dir, "nowait.json", strings.Replace(good, `"id":1,`, `"id":1,"group_commit_wait":"0s",`, 1), 0o644))
	if err != nil {
		t.Fatal(err)
	}
	if w := noWait.GroupCommitWaitOrDefault(); w != 0 {
		t.Fatalf(`"group_commit_wait":"0s" loaded as %v, want 0 (binlogd leaves the settings alone)`, w)
	}
	if n := c.ReplicaApplyThreadsOrDefault(); n != DefaultReplicaApplyThreads {
		t.Fatalf("replica_apply_threads defaults to %d, want %d", n, DefaultReplicaApplyThreads)
	}
	serial, err := Load(write(t, dir, "serial.json", strings.Replace(good, `"id":1,`, `"id":1,"replica_apply_threads":0,`, 1), 0o644))
	if err != nil {
		t.Fatal(err)
	}
	if n := serial.ReplicaApplyThreadsOrDefault(); n != 0 {
		t.Fatalf(`"replica_apply_threads":0 loaded as %d, want 0 (one SQL thread)`, n)
	}
	if b, m := c.CPUNiceOrDefault(), c.MySQLNiceOrDefault(); b != DefaultCPUNice || m != DefaultMySQLNice || b >= m {
		t.Fatalf("cpu_nice, mysql_nice default to %d, %d: want %d, %d (binlogd ahead)", b, m, DefaultCPUNice, DefaultMySQLNice)
	}
	flat, err := Load(write(t, dir, "flat.json", strings.Replace(good, `"id":1,`, `"id":1,"cpu_nice":0,"mysql_nice":5,`, 1), 0o644))
	if err != nil {
		t.Fatal(err)
	}
	if b, m := flat.CPUNiceOrDefault(), flat.MySQLNiceOrDefault(); b != 0 || m != 5 {
		t.Fatalf(`"cpu_nice":0,"mysql_nice":5 loaded as %d, %d`, b, m)
	}
}

func TestErrorsNameTheKey(t *testing.T) {
	cases := []struct{ from, to, key string }{
		{`"id":1,`, `"id":9,`, `"id"`},
		{`"repl_addr":"127.0.0.1:3"`, `"repl_addr":"nope"`, `"repl_addr"`}, // an old-style members[].repl_addr is this node's repl_addr
		{`"mysql_addr":"127.0.0.1:5"`, `"mysql_addr":"127.0.0.1:2"`, `members[1].mysql_addr`},
		{`"dir":"n1",`, `"dir":"n1","lease_duration":"5s","drift_margin":"3s",`, `drift_margin`},
		{`"credentials_file"`, `"bogus_key":1,"credentials_file"`, `bogus_key`},
		{`"dir":"n1",`, `"dir":"n1","log_retention":"-1h",`, `log_retention`},
		{`"dir":"n1",`, `"dir":"n1","log_retention_bytes":1000,`, `log_retention_bytes`},
		{`"dir":"n1",`, `"dir":"n1","group_commit_wait":"-1ms",`, `group_commit_wait`},
		{`"dir":"n1",`, `"dir":"n1","group_commit_wait":"1s",`, `group_commit_wait`},
		{`"dir":"n1",`, `"dir":"n1","replica_apply_threads":-1,`, `replica_apply_threads`},
		{`"dir":"n1",`, `"dir":"n1","replica_apply_threads":1000,`, `replica_apply_threads`},
		{`"dir":"n1",`, `"dir":"n1","replica_apply_threads":"4",`, `replica_apply_threads`},
		{`"dir":"n1",`, `"dir":"n1","cpu_nice":-21,`, `cpu_nice`},
		{`"dir":"n1",`, `"dir":"n1","mysql_nice":20,`, `mysql_nice`},
	}
	for _, c := range cases {
		body := strings.Replace(good, c.from, c.to, 1)
		_, err := loadBody(t, body)
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.key) || !strings.Contains(err.Error(), "c.json") {
			t.Errorf("%s: error does not name key %s and the file: %v", c.to, c.key, err)
		}
	}
}

func TestCredentialsMode(t *testing.T) {
	dir := t.TempDir()
	cr := Credentials{CaptureUser: "c", CapturePassword: "p", AppUser: "a", AppPassword: "q"}
	p := filepath.Join(dir, "cred.json")
	if err := SaveCredentials(p, cr); err != nil {
		t.Fatal(err)
	}
	if got, err := LoadCredentials(p); err != nil || !reflect.DeepEqual(got, cr) {
		t.Fatal(got, err)
	}
	os.Chmod(p, 0o644)
	if _, err := LoadCredentials(p); err == nil || !strings.Contains(err.Error(), "0600") {
		t.Fatalf("world-readable credentials accepted: %v", err)
	}
}

// A joining node lists the current members and itself: any count; a new
// cluster's initial members stay odd.
func TestJoinAllowsEvenMembers(t *testing.T) {
	dir := t.TempDir()
	four := strings.Replace(good, `]}`, `,
  {"id":4,"grpc_addr":"127.0.0.1:10","mysql_addr":"127.0.0.1:11","repl_addr":"127.0.0.1:12"}]}`, 1)
	if _, err := Load(write(t, dir, "even.json", four, 0o644)); err == nil || !strings.Contains(err.Error(), `"members"`) {
		t.Fatalf("4 initial members: %v", err)
	}
	join := strings.Replace(four, `"id":1,`, `"id":4,"join":true,`, 1)
	c, err := Load(write(t, dir, "join.json", join, 0o644))
	if err != nil {
		t.Fatal(err)
	}
	if !c.Join || c.Self().ID != 4 {
		t.Fatalf("%+v", c)
	}
}
