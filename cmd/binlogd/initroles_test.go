package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"phxgo/binlogd/config"
)

// binlogd init writes a witness (binlogd only: a config binlogd loads,
// its node certificate, no credentials, no sqlproxy files) and a learner
// (a data node marked "learner" in every node's members); voters count
// toward the odd number, learners do not. init -add adds either.
func TestInitWitnessAndLearner(t *testing.T) {
	noDial(t)
	out := filepath.Join(t.TempDir(), "phxgo-init")
	stdout, err := initArgs(t, "-out", out, "-hosts", "10.0.0.1,10.0.0.2",
		"-witness", "3=10.0.0.3:17011", "-learner", "4=10.0.0.4:17011,10.0.0.4:3306,10.0.0.4:3307")
	if err != nil {
		t.Fatal(err)
	}
	cfgs := checkInitOut(t, out, 1, 2, 4)
	for _, c := range cfgs {
		if len(c.Members) != 4 || !c.Members[2].Witness || c.Members[2].MySQLAddr != "" || !c.Members[3].Learner || c.Members[0].Learner {
			t.Fatalf("node %d's members: %+v", c.ID, c.Members)
		}
	}
	if !cfgs[2].IsLearner() || !cfgs[2].SuperviseMySQL {
		t.Fatalf("learner: IsLearner %v supervise_mysql %v", cfgs[2].IsLearner(), cfgs[2].SuperviseMySQL)
	}
	wdir := filepath.Join(out, "node3")
	w, err := config.Load(filepath.Join(wdir, "binlogd.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !w.IsWitness() || w.SuperviseMySQL || w.MySQLDir != "" || w.CredentialsFile != "" {
		t.Fatalf("witness config: witness %v supervise %v mysql_dir %q credentials %q", w.IsWitness(), w.SuperviseMySQL, w.MySQLDir, w.CredentialsFile)
	}
	if _, err := w.TLS(); err != nil {
		t.Fatalf("witness TLS: %v", err)
	}
	for _, f := range []string{"credentials.json", "proxy-password", "sqlproxy.env", "proxy3.crt"} {
		if _, err := os.Stat(filepath.Join(wdir, f)); !os.IsNotExist(err) {
			t.Errorf("witness dir has %s (%v)", f, err)
		}
	}
	if !strings.Contains(stdout, "node 3: witness (binlogd only), grpc 10.0.0.3:17011") {
		t.Errorf("output does not name the witness:\n%s", stdout)
	}

	// Adding: a second witness and a learner to that output.
	if _, err := initArgs(t, "-out", out, "-add", "-witness", "5=10.0.0.5:17011"); err != nil {
		t.Fatal(err)
	}
	w5, err := config.Load(filepath.Join(out, "node5", "binlogd.json"))
	if err != nil || !w5.IsWitness() || !w5.Join || !w5.Members[2].Witness || !w5.Members[3].Learner {
		t.Fatalf("added witness: %v %+v", err, w5)
	}
	if _, err := initArgs(t, "-out", out, "-add", "-learner", "6=10.0.0.6:17011,10.0.0.6:3306,10.0.0.6:3307"); err != nil {
		t.Fatal(err)
	}
	checkAdded := checkInitOut(t, out, 6)
	if !checkAdded[0].IsLearner() || !checkAdded[0].Join {
		t.Fatalf("added learner: %+v", checkAdded[0].Self())
	}

	// Voters odd: two data nodes and a learner is two voters.
	if _, err := initArgs(t, "-out", filepath.Join(t.TempDir(), "x"), "-hosts", "10.0.0.1,10.0.0.2", "-learner", "3=10.0.0.3:17011,10.0.0.3:3306"); err == nil || !strings.Contains(err.Error(), "2 voting nodes") {
		t.Fatalf("two voters and a learner: %v", err)
	}
	for _, bad := range []string{"3=10.0.0.3:17011,10.0.0.3:3306", "3=", "x=10.0.0.3:17011"} {
		if _, err := parseInit([]string{"-hosts", "10.0.0.1,10.0.0.2", "-witness", bad}, &strings.Builder{}); err == nil {
			t.Errorf("-witness %q accepted", bad)
		}
	}
}
