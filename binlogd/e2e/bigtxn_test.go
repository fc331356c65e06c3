package e2e

import (
	"strings"
	"testing"
	"time"

	"phxgo/binlogd/localcluster"
)

// A transaction far bigger than one Paxos value travels as fragments
// (BinlogBatch more/continued) and arrives whole on every replica, with
// DDL around it.
func TestBigTransactionAndDDL(t *testing.T) {
	c, master := localcluster.StartForTest(t, binDir, 3, 8*time.Second, false)
	db := appDBWith(t, c, master, "CREATE DATABASE big", "CREATE TABLE big.t (id INT PRIMARY KEY, pad LONGTEXT)")
	defer db.Close()
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	pad := strings.Repeat("x", 1<<20)
	for i := 0; i < 20; i++ { // ~20 MB of row events in one transaction
		if _, err := tx.Exec("INSERT INTO big.t VALUES (?, ?)", i, pad); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	mustExec(t, db, "ALTER TABLE big.t ADD COLUMN n INT DEFAULT 7")
	mustExec(t, db, "UPDATE big.t SET n = id WHERE id < 5")
	pos := awaitSameData(t, c, "big.t")
	t.Logf("20 MB transaction and DDL identical on 3 nodes at %s", pos)
}
