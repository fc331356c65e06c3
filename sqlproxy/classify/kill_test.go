package classify

import "testing"

// TestKillsQuery: every KILL that ends only a statement is flagged (the
// proxy refuses it), connection kills are not.
func TestKillsQuery(t *testing.T) {
	cases := []struct {
		sql  string
		want bool
	}{
		{"KILL QUERY 5", true},
		{"kill query 5", true},
		{"Kill Hard Query 5", true},
		{"KILL SOFT QUERY 5", true},
		{"KILL QUERY ID 77", true},
		{"KILL HARD QUERY ID 77", true},
		{"KILL QUERY USER app", true},
		{"KILL SOFT QUERY USER 'app'@'%'", true},
		{"  /* x */ KILL /* y */ QUERY\n\t5", true},
		{"-- c\nKILL#c\nQUERY 5", true},
		{"/*!KILL QUERY 5*/", true},
		{"/*M!100000 KILL QUERY 5 */", true},
		{"/*#mode=readwrite*/ KILL QUERY 5", true},
		{"SELECT 1; KILL QUERY 5", true},
		{"SELECT 1;kill hard query 5;", true},
		{"EXECUTE IMMEDIATE 'KILL QUERY 5'", true},
		{`execute immediate "kill soft query 5"`, true},
		{"EXECUTE IMMEDIATE 'KILL\\nQUERY 5'", true},
		{"EXECUTE IMMEDIATE 'EXECUTE IMMEDIATE ''KILL QUERY 5'''", true},
		{"PREPARE s FROM 'KILL QUERY ?'", true},
		{"PREPARE s FROM /* it's */ 'KILL QUERY ?'", true},
		{"SELECT 1; PREPARE s FROM 'KILL QUERY ?'", true},

		{"KILL 5", false},
		{"KILL CONNECTION 5", false},
		{"KILL HARD CONNECTION 5", false},
		{"KILL SOFT 5", false},
		{"KILL USER app", false},
		{"KILL CONNECTION USER app", false},
		{"SELECT 'KILL QUERY 5'", false},
		{"SELECT * FROM query", false},
		{"INSERT INTO t VALUES ('KILL QUERY 5')", false},
		{"SELECT 1 -- KILL QUERY 5", false},
		{"EXECUTE IMMEDIATE 'KILL 5'", false},
		{"PREPARE s FROM 'SELECT ''KILL QUERY 5'''", false},
		{"EXECUTE s USING @a", false},
	}
	for _, c := range cases {
		if got := Classify(c.sql).KillsQuery; got != c.want {
			t.Errorf("Classify(%q).KillsQuery = %v, want %v", c.sql, got, c.want)
		}
	}
}
