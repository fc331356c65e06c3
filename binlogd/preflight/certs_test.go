package preflight

import (
	"path/filepath"
	"testing"
	"time"

	"phxgo/binlogd/config"
	"phxgo/binlogd/mtls"
)

// issue makes a CA in dir and node certificates for ids (host 127.0.0.1).
func issue(t *testing.T, dir string, ids ...uint32) {
	t.Helper()
	if err := mtls.WriteCA(dir, 365*24*time.Hour); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if _, _, err := mtls.WriteCert(dir, mtls.Identity{Role: mtls.RoleNode, ID: id}, []string{"127.0.0.1", "localhost"}, 90*24*time.Hour); err != nil {
			t.Fatal(err)
		}
	}
}

func TestCheckCerts(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	issue(t, a, 1, 2, 3)
	issue(t, b, 1)
	node := func(dir string, id uint32) mtls.Files {
		return mtls.DirFiles(dir, mtls.Identity{Role: mtls.RoleNode, ID: id})
	}
	for _, c := range []struct {
		name    string
		id      uint32
		files   mtls.Files
		now     time.Duration // from now
		check   string
		want    Status
		finding string
		fix     string
	}{
		{"all good", 2, node(a, 2), 0, "tls", OK, "", ""},
		{"another node's certificate", 2, node(a, 3), 0, "tls identity", Fail, "node3.crt says node 3, but this config is node 2",
			`set "tls_cert": "` + node(a, 2).Cert + `"`},
		{"no file for this node", 4, node(a, 3), 0, "tls identity", Fail, "node3.crt says node 3", "issue node 4's certificate"},
		{"another node's key", 2, mtls.Files{Cert: node(a, 2).Cert, Key: node(a, 3).Key, CA: node(a, 2).CA}, 0, "tls_key", Fail,
			"is not the key of", "set tls_key in"},
		{"another CA", 1, mtls.Files{Cert: node(b, 1).Cert, Key: node(b, 1).Key, CA: node(a, 1).CA}, 0, "tls chain", Fail,
			"not accepted by the CA", "issue node 1's certificate"},
		{"expires in 10 days", 1, node(a, 1), 80 * 24 * time.Hour, "tls_cert", Warn, "in 9 days", "issue node 1's"},
		{"expired", 1, node(a, 1), 100 * 24 * time.Hour, "tls_cert", Fail, "expired on", "issue node 1's"},
		{"CA expired", 1, node(a, 1), 400 * 24 * time.Hour, "tls_ca", Fail, "expired on", "make a new CA"},
		{"not yet valid", 1, node(a, 1), -2 * time.Hour, "tls_cert", Fail, "not valid before", "check this host's clock"},
		{"missing file", 1, mtls.Files{Cert: node(a, 1).Cert, Key: node(a, 1).Key, CA: filepath.Join(a, "nope.crt")}, 0, "tls_ca", Fail,
			"no such file", "set tls_ca in"},
		{"a key as the certificate", 1, mtls.Files{Cert: node(a, 1).Key, Key: node(a, 1).Key, CA: node(a, 1).CA}, 0, "tls_cert", Fail,
			"no PEM certificate", `set "tls_cert": "` + node(a, 1).Cert + `"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			env := testEnv(t)
			env.Now = time.Now().Add(c.now)
			cfg := testConfig(t)
			cfg.ID, cfg.Members[0].ID = c.id, c.id
			cfg.Security = config.Security{TLSCert: c.files.Cert, TLSKey: c.files.Key, TLSCA: c.files.CA}
			env.Config = cfg
			rs := CheckCerts(env)
			if c.want == OK {
				if Worst(rs) != OK || len(rs) < 6 {
					t.Fatalf("want all ok, got %+v", rs)
				}
				return
			}
			var hit []Result
			for _, r := range rs {
				if r.Check == c.check && r.Status != OK {
					hit = append(hit, r)
				}
			}
			want1(t, hit, c.want, c.finding, c.fix)
		})
	}
}

func TestCheckCertsHosts(t *testing.T) {
	a := t.TempDir()
	issue(t, a, 1)
	env := testEnv(t)
	cfg := testConfig(t)
	f := mtls.DirFiles(a, mtls.Identity{Role: mtls.RoleNode, ID: 1})
	cfg.Security = config.Security{TLSCert: f.Cert, TLSKey: f.Key, TLSCA: f.CA}
	cfg.Members[0].GRPCAddr = "10.1.2.3:17011" // not among the certificate's hosts
	env.Config = cfg
	want1(t, only(CheckCerts(env), "tls host grpc_addr"), Fail, "no SAN for 10.1.2.3", "with 10.1.2.3 among its hosts")
}

func TestCheckCertsOff(t *testing.T) {
	env := testEnv(t)
	env.Config = testConfig(t) // insecure_no_tls
	want1(t, CheckCerts(env), Warn, "insecure_no_tls is set", "remove insecure_no_tls")
	env.Config.InsecureNoTLS = false
	want1(t, CheckCerts(env), Fail, "no tls_* keys", `"insecure_no_tls": true`)
}
