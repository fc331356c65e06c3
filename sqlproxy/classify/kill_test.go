package classify

import "testing"

// TestKills: every KILL is flagged (the proxy refuses it), wherever it
// stands in the text; a KILL inside data is not.
func TestKills(t *testing.T) {
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

		{"KILL 5", true},
		{"KILL CONNECTION 5", true},
		{"KILL HARD CONNECTION 5", true},
		{"KILL SOFT 5", true},
		{"KILL USER app", true},
		{"KILL CONNECTION USER app", true},
		{"SELECT 'KILL QUERY 5'", false},
		{"SELECT * FROM query", false},
		{"INSERT INTO t VALUES ('KILL QUERY 5')", false},
		{"SELECT 1 -- KILL QUERY 5", false},
		{"EXECUTE IMMEDIATE 'KILL 5'", true},
		{"PREPARE s FROM 'SELECT ''KILL QUERY 5'''", false},
		{"EXECUTE s USING @a", false},

		// The red-team test of session 37: adjacent literals, hex
		// literals, and KILL behind SET STATEMENT.
		{"EXECUTE IMMEDIATE 'KI' 'LL QUERY 23'", true},
		{"EXECUTE IMMEDIATE 'KI'\n  \"LL QUERY 23\"", true},
		{"PREPARE s FROM 'KILL' ' QUERY ?'", true},
		{"EXECUTE IMMEDIATE 0x4B494C4C2051554552592032330A", true},
		{"EXECUTE IMMEDIATE x'4b494c4c203233'", true},
		{"SELECT 1; EXECUTE IMMEDIATE 0x4B494C4C203233", true},
		{"SET STATEMENT max_statement_time=0 FOR KILL QUERY 23", true},
		{"set statement max_statement_time=1, sql_mode='' for kill 5", true},
		{"SET STATEMENT max_statement_time=0 FOR EXECUTE IMMEDIATE 'KILL 5'", true},
		{"/*!SET STATEMENT max_statement_time=0 FOR KILL 5*/", true},
		// The second red-team pass of session 37: KILL in compound
		// statements and routine bodies, literals joined across
		// comments, bit literals.
		{"BEGIN NOT ATOMIC KILL QUERY 23; END", true},
		{"IF 1 THEN KILL QUERY 23; END IF", true},
		{"l: BEGIN NOT ATOMIC SELECT 1; KILL 23; END", true},
		{"CREATE PROCEDURE p() KILL 5", true},
		{"CREATE EVENT e ON SCHEDULE EVERY 1 SECOND DO KILL 5", true},
		{"CREATE TRIGGER t BEFORE INSERT ON x FOR EACH ROW BEGIN KILL 5; END", true},
		{"EXECUTE IMMEDIATE 'KI' /**/ 'LL QUERY 23'", true},
		{"EXECUTE IMMEDIATE 'KI' -- x\n 'LL QUERY 23'", true},
		{"EXECUTE IMMEDIATE 'KI' # x\n 'LL QUERY 23'", true},
		{"EXECUTE IMMEDIATE b'01001011010010010100110001001100001000000011001000110011'", true},
		{"EXECUTE IMMEDIATE 0b01001011010010010100110001001100001000000011001000110011", true},
		{"EXECUTE IMMEDIATE CONCAT(b'0100101101001001010011000100110000100000', '23')", true}, // the bits alone read "KILL "
		{"SELECT 0b0101, x'41', b'1'", false},
		{"SELECT `kill` FROM t", false},
		{"SELECT t.kill FROM t", false},
		{"EXECUTE IMMEDIATE 'SELECT 1' ', 2'", false},
		{"SELECT 0x4B494C4C203233", false},
		{"INSERT INTO t VALUES (0x4B494C4C203233)", false},
		{"SET STATEMENT max_statement_time=0 FOR INSERT INTO t VALUES ('KILL 5')", false},
	}
	for _, c := range cases {
		if got := Classify(c.sql).Kills; got != c.want {
			t.Errorf("Classify(%q).Kills = %v, want %v", c.sql, got, c.want)
		}
	}
}
