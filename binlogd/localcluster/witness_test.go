package localcluster

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"phxgo/binlogd/config"
)

// TestWitnessSpec: Prepare writes configs binlogd loads, with node 3 a
// witness in every node's members and supervising no MariaDB; a spec of
// witnesses only is refused.
func TestWitnessSpec(t *testing.T) {
	bin := t.TempDir()
	for _, b := range []string{"binlogd", "sqlproxy"} {
		if err := os.WriteFile(filepath.Join(bin, b), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	spec := Spec{Dir: t.TempDir(), Nodes: 3, Witnesses: WitnessIDs(2, 1), BasePort: 20000, BinDir: bin, Proxy: true, InsecureNoTLS: true}
	if err := Prepare(spec); err != nil {
		t.Fatal(err)
	}
	for id := 1; id <= 3; id++ {
		c, err := config.Load(filepath.Join(spec.NodeDir(id), "binlogd.json"))
		if err != nil {
			t.Fatalf("node %d: %v", id, err)
		}
		if w := id == 3; c.IsWitness() != w || c.SuperviseMySQL == w || !c.Members[2].Witness || c.Members[2].MySQLAddr != "" || c.Members[2].ProxyAddr != "" {
			t.Fatalf("node %d: witness %v supervise_mysql %v members[2] %+v", id, c.IsWitness(), c.SuperviseMySQL, c.Members[2])
		}
	}
	all := spec
	all.Dir, all.Witnesses = t.TempDir(), []int{1, 2, 3}
	if err := Prepare(all); err == nil || !strings.Contains(err.Error(), "at least one node must run MariaDB") {
		t.Fatalf("witnesses only: %v", err)
	}
}
