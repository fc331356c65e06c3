package config

import (
	"errors"
	"strings"
	"testing"
)

// witnessCfg: nodes 1 and 2 run MariaDB, node 3 is a witness; the file
// is node id's.
func witnessCfg(id, extra string) string {
	return `{"id":` + id + `,"insecure_no_tls":true,"dir":"n","mysql_dir":"n/mysql","credentials_file":"cred.json",` + extra + `
 "members":[
  {"id":1,"grpc_addr":"127.0.0.1:1","mysql_addr":"127.0.0.1:2"},
  {"id":2,"grpc_addr":"127.0.0.1:4","mysql_addr":"127.0.0.1:5"},
  {"id":3,"grpc_addr":"127.0.0.1:7","witness":true}]}`
}

func TestWitnessConfig(t *testing.T) {
	dir := t.TempDir()
	data, err := Load(write(t, dir, "n1.json", witnessCfg("1", `"supervise_mysql":true,`), 0o644))
	if err != nil {
		t.Fatal(err)
	}
	if data.IsWitness() || !data.Members[2].Witness {
		t.Fatalf("node 1: IsWitness %v, members[2] %+v", data.IsWitness(), data.Members[2])
	}
	// A witness needs no mysql_dir, credentials or MariaDB address.
	w, err := Load(write(t, dir, "n3.json", strings.Replace(witnessCfg("3", ""), `"mysql_dir":"n/mysql","credentials_file":"cred.json",`, "", 1), 0o644))
	if err != nil {
		t.Fatal(err)
	}
	if !w.IsWitness() {
		t.Fatal("node 3 is not a witness")
	}
	for _, c := range []struct{ name, body, key string }{
		{"witness supervising MariaDB", witnessCfg("3", `"supervise_mysql":true,`), `"supervise_mysql"`},
		{"witness advertising MariaDB", strings.Replace(witnessCfg("1", ""), `"witness":true`, `"witness":true,"mysql_addr":"127.0.0.1:8"`, 1), `members[2].witness`},
		{"only witnesses", strings.NewReplacer(`"mysql_addr":"127.0.0.1:2"}`, `"witness":true}`, `"mysql_addr":"127.0.0.1:5"}`, `"witness":true}`).Replace(witnessCfg("3", "")), `"members"`},
	} {
		_, err := Load(write(t, dir, "bad.json", c.body, 0o644))
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.key) {
			t.Errorf("%s: err %v, want ErrInvalid naming %s", c.name, err, c.key)
		}
	}
}
