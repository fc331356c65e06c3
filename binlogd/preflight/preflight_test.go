package preflight

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"phxgo/binlogd/mtls"
)

// TestRunInvalidConfigStillChecksTheRest: a config that fails validation
// (here: node 2 configured with node 3's certificate) is a config FAIL,
// and the later checks still run on it and name the cause with its fix.
func TestRunInvalidConfigStillChecksTheRest(t *testing.T) {
	certs := t.TempDir()
	issue(t, certs, 2, 3)
	env := testEnv(t)
	env.Limits.FsyncSamples = 2
	env.Limits.WarnFreeBytes, env.Limits.FailFreeBytes = 0, 0
	n3 := mtls.DirFiles(certs, mtls.Identity{Role: mtls.RoleNode, ID: 3})
	dir := filepath.Dir(env.ConfigPath)
	writeFile(t, filepath.Join(dir, "cred.json"), `{"capture_user":"c","capture_password":"vT3kq9Zr1mX8wL2p","app_user":"a","app_password":"Hn4sB7yQ0cE6uJ5d"}`, 0o600)
	writeFile(t, env.ConfigPath, fmt.Sprintf(`{"id":2,"dir":"n2","mysql_dir":"n2/mysql","credentials_file":"cred.json",
 "tls_cert":%q,"tls_key":%q,"tls_ca":%q, "repl_addr":%q,
 "members":[{"id":2,"grpc_addr":%q,"mysql_addr":%q}]}`, n3.Cert, n3.Key, n3.CA, freeAddr(t), freeAddr(t), freeAddr(t)), 0o644)

	rs := Run(context.Background(), env)
	want1(t, only(rs, "config"), Fail, `key "tls_cert"`, "edit "+env.ConfigPath)
	want1(t, only(rs, "tls identity"), Fail, "node3.crt says node 3, but this config is node 2",
		`set "tls_cert": "`+filepath.Join(certs, "node2.crt")+`" and "tls_key": "`+filepath.Join(certs, "node2.key")+`"`)
	for _, g := range []string{"mariadbd", "port ", "dir ", "perms ", "clocksource", "disk ", "fsync ", "credentials"} {
		if len(only(rs, g)) == 0 {
			t.Errorf("no %q results after an invalid config", g)
		}
	}
	var b strings.Builder
	if err := WriteText(&b, rs); err != nil || ExitCode(rs) != 1 {
		t.Fatalf("exit %d, %v", ExitCode(rs), err)
	}
}

// TestRunUnreadableConfig: with no config at all only the host checks run.
func TestRunUnreadableConfig(t *testing.T) {
	env := testEnv(t)
	writeFile(t, env.ConfigPath, `not json`, 0o644)
	rs := Run(context.Background(), env)
	for _, r := range rs {
		if strings.HasPrefix(r.Check, "port") || strings.HasPrefix(r.Check, "dir") || strings.HasPrefix(r.Check, "tls") {
			t.Fatalf("config-dependent check ran without a config: %+v", r)
		}
	}
	if len(only(rs, "clocksource")) != 1 || len(only(rs, "mariadbd")) != 1 || ExitCode(rs) != 1 {
		t.Fatalf("%+v", rs)
	}
}
