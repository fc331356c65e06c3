package classify

import "testing"

// TestDynamic: every text that runs SQL MariaDB builds or looks up at run
// time says so, wherever PREPARE or EXECUTE stands; quoted or as part of
// another word they are data.
func TestDynamic(t *testing.T) {
	for _, tc := range []struct {
		sql  string
		want bool
	}{
		{"PREPARE s FROM @v", true},
		{"prepare s from concat('KI', 'LL 5')", true},
		{"EXECUTE IMMEDIATE CONCAT('KI','LL QUERY ', 5)", true},
		{"EXECUTE s USING @a", true},
		{"PREPARE s FROM 'SELECT 1'", true}, // EXECUTE s runs it later, by name
		{"DO 1; EXECUTE IMMEDIATE @v", true},
		{"BEGIN NOT ATOMIC EXECUTE IMMEDIATE @v; END", true},
		{"CREATE PROCEDURE p() BEGIN PREPARE s FROM @v; EXECUTE s; END", true},
		{"SET STATEMENT max_statement_time=1 FOR EXECUTE IMMEDIATE @v", true},
		{"/*!100000 EXECUTE IMMEDIATE @v */", true},
		{"/*M!100000 PREPARE s FROM @v */", true},
		{"SELECT 1 /* EXECUTE IMMEDIATE @v */", false},
		{"SELECT 'EXECUTE IMMEDIATE @v'", false},
		{"SELECT prepared_at, executed FROM t", false},
		{"INSERT INTO t (note) VALUES ('prepare to execute')", false},
		{"SELECT 1", false},
	} {
		if got := Classify(tc.sql).Dynamic; got != tc.want {
			t.Errorf("%q: Dynamic %v, want %v", tc.sql, got, tc.want)
		}
	}
}
