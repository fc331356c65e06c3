package classify

import "testing"

func TestEffect(t *testing.T) {
	cases := []struct {
		sql  string
		want TxEffect
	}{
		{"SELECT * FROM t FOR UPDATE", TxKeeps},
		{"update t set v=1", TxKeeps},
		{"INSERT INTO t VALUES (1)", TxKeeps},
		{"SAVEPOINT a", TxKeeps},
		{"SET @x = 1", TxKeeps},
		{"SET autocommit=0", TxKeeps},
		{"ROLLBACK TO SAVEPOINT a", TxKeeps},
		{"ROLLBACK WORK TO a", TxKeeps},
		{"ROLLBACK AND CHAIN", TxKeeps},
		{"ROLLBACK", TxRollsBack},
		{"rollback work", TxRollsBack},
		{"ROLLBACK AND NO CHAIN", TxRollsBack},
		{"COMMIT", TxMayCommit},
		{"BEGIN", TxMayCommit},
		{"START TRANSACTION", TxMayCommit},
		{"SET autocommit=1", TxMayCommit},
		{"CREATE TABLE x (a INT)", TxMayCommit},
		{"LOCK TABLES t WRITE", TxMayCommit},
		{"CALL p()", TxMayCommit},
		{"UPDATE t SET v=1; COMMIT", TxMayCommit},
		{"", TxMayCommit},
	}
	for _, c := range cases {
		if got := Effect(c.sql); got != c.want {
			t.Errorf("Effect(%q) = %d, want %d", c.sql, got, c.want)
		}
	}
}
