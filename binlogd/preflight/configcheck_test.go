package preflight

import (
	"path/filepath"
	"strings"
	"testing"
)

const goodConfig = `{"id":1,"insecure_no_tls":true,"dir":"n1","mysql_dir":"n1/mysql","credentials_file":"cred.json",
 "repl_addr":"127.0.0.1:17012",
 "members":[{"id":1,"grpc_addr":"127.0.0.1:17011","mysql_addr":"127.0.0.1:13306"}]}`

func TestCheckConfig(t *testing.T) {
	for _, c := range []struct {
		name, body string
		want       Status
		finding    string
		fix        string
		lenient    bool // env.Config set although invalid
	}{
		{"good", goodConfig, OK, "loads and validates (node 1, 1 members)", "", true},
		{"bad key", strings.Replace(goodConfig, `"id":1,`, `"id":1,"lease_duration":"100ms",`, 1), Fail,
			`key "lease_duration"`, "edit ", true},
		{"not in members", strings.Replace(goodConfig, `"id":1,`, `"id":7,`, 1), Fail, "7 is not in members", "edit ", true},
		{"not JSON", `{"id":1,`, Fail, "invalid config", "python3 -m json.tool", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			env := testEnv(t)
			writeFile(t, env.ConfigPath, c.body, 0o644)
			want1(t, CheckConfig(env), c.want, c.finding, c.fix)
			if (env.Config != nil) != c.lenient {
				t.Fatalf("env.Config = %v, want set: %v", env.Config, c.lenient)
			}
			if env.Config != nil && env.Config.Dir != filepath.Join(filepath.Dir(env.ConfigPath), "n1") {
				t.Fatalf("dir %q not resolved against the config's directory", env.Config.Dir)
			}
		})
	}
	env := testEnv(t)
	want1(t, CheckConfig(env), Fail, "does not exist", "binlogd check -config")
}

func TestReadLenientMovesLegacyReplAddr(t *testing.T) {
	env := testEnv(t)
	body := strings.Replace(goodConfig, `"repl_addr":"127.0.0.1:17012",`, "", 1)
	body = strings.Replace(body, `"mysql_addr":"127.0.0.1:13306"}`, `"mysql_addr":"127.0.0.1:13306","repl_addr":"127.0.0.1:19999"}`, 1)
	body = strings.Replace(body, `"id":1,`, `"id":1,"lease_duration":"1ms",`, 1) // invalid: the lenient path
	writeFile(t, env.ConfigPath, body, 0o644)
	want1(t, CheckConfig(env), Fail, "lease_duration", "")
	if env.Config == nil || env.Config.ReplAddr != "127.0.0.1:19999" {
		t.Fatalf("repl_addr not taken from members: %+v", env.Config)
	}
}
