package preflight

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckCredentials(t *testing.T) {
	const strong = "Zq8w1hT0pQ7e4LxR"
	for _, c := range []struct {
		name, body string
		want       Status
		finding    string
	}{
		{"strong", `{"capture_user":"phxgo_capture","capture_password":"` + strong + `","app_user":"app","app_password":"` + strong + `x"}`, OK, "2 passwords set"},
		{"with proxy", `{"capture_user":"c","capture_password":"` + strong + `","app_user":"a","app_password":"` + strong + `","proxy_user":"p","proxy_password":"` + strong + `"}`, OK, "3 passwords"},
		{"make cluster's defaults", `{"capture_user":"phxgo_capture","capture_password":"capture-secret","app_user":"app","app_password":"` + strong + `"}`, Fail, `"capture_password" is a default`},
		{"app-secret", `{"capture_user":"c","capture_password":"` + strong + `","app_user":"app","app_password":"app-secret"}`, Fail, `"app_password" is a default`},
		{"password is the user", `{"capture_user":"c","capture_password":"` + strong + `","app_user":"shopkeeper","app_password":"ShopKeeper"}`, Fail, `"app_password" is a default`},
		{"empty", `{"capture_user":"c","capture_password":"","app_user":"a","app_password":"` + strong + `"}`, Fail, `"capture_password" is missing or empty`},
		{"short", `{"capture_user":"c","capture_password":"` + strong + `","app_user":"a","app_password":"k9#Lm2"}`, Warn, "6 characters"},
		{"unknown key", `{"capture_user":"c","capture_password":"` + strong + `","app_user":"a","app_password":"` + strong + `","app_pasword":"x"}`, Fail, `unknown field "app_pasword"`},
		{"not JSON", `capture_password=x`, Fail, "invalid character"},
	} {
		t.Run(c.name, func(t *testing.T) {
			env := testEnv(t)
			env.Config = testConfig(t)
			writeFile(t, env.Config.CredentialsFile, c.body, 0o600)
			want1(t, CheckCredentials(env), c.want, c.finding, "")
		})
	}
	env := testEnv(t)
	env.Config = testConfig(t)
	env.Config.CredentialsFile = filepath.Join(t.TempDir(), "missing.json")
	if rs := CheckCredentials(env); len(rs) != 0 {
		t.Fatalf("a missing file is the perms check's finding; got %+v", rs)
	}
}

func TestDefaultPasswordFix(t *testing.T) {
	env := testEnv(t)
	env.Config = testConfig(t)
	writeFile(t, env.Config.CredentialsFile, `{"capture_user":"c","capture_password":"capture-secret","app_user":"a","app_password":"app-secret"}`, 0o600)
	rs := CheckCredentials(env)
	if len(rs) != 2 || rs[0].Fix != `set "app_password" in `+env.Config.CredentialsFile+` to a random secret, e.g. the output of: openssl rand -base64 24` {
		t.Fatalf("%+v", rs)
	}
	for _, r := range rs {
		if strings.Contains(r.Finding+r.Fix, "secret\"") || strings.Contains(r.Finding+r.Fix, "capture-secret") {
			t.Fatalf("a password was printed: %+v", r)
		}
	}
}
