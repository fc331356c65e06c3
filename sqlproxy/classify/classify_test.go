package classify

import (
	"testing"
)

// TestClassifyNoAlloc: the linearizable port classifies every COM_QUERY;
// a point select must not allocate.
func TestClassifyNoAlloc(t *testing.T) {
	if n := testing.AllocsPerRun(100, func() { Classify("select c from sbtest1 where id=4711") }); n != 0 {
		t.Fatalf("%v allocations per Classify", n)
	}
}

func TestClassify(t *testing.T) {
	cases := []struct {
		sql  string
		want Info
	}{
		{"SELECT 1", Info{Kind: Read}},
		{"  select * from t where a='for update'", Info{Kind: Read}},
		{"SELECT * FROM t FOR UPDATE", Info{Kind: Read, Locking: true}},
		{"SELECT * FROM t LOCK IN SHARE MODE", Info{Kind: Read, Locking: true}},
		{"SELECT * FROM t FOR SHARE", Info{Kind: Read, Locking: true}},
		{"/*#mode=readwrite*/ SELECT 1", Info{Kind: Read, Hint: ReadWrite}},
		{"SELECT /* #mode=readonly */ 1", Info{Kind: Read, Hint: ReadOnly}},
		{"-- c\nSHOW TABLES", Info{Kind: Read}},
		{"# c\nINSERT INTO t VALUES (1)", Info{Kind: Write}},
		{"SELECT a INTO @x FROM t", Info{Kind: Write, Pins: true}}, // @x set by a query: not replayable
		{"SELECT a FROM t INTO OUTFILE '/tmp/x'", Info{Kind: Write}},
		{"SELECT GET_LOCK('a', 1)", Info{Kind: Other, Pins: true}},
		{"SELECT LAST_INSERT_ID()", Info{Kind: Other}},
		{"SELECT NEXT VALUE FOR s", Info{Kind: Other}},
		{"select previous value for s", Info{Kind: Other}},
		{"SELECT next FROM t", Info{Kind: Read}},
		{"SELECT @x := 1", Info{Kind: Read, Pins: true}},
		{"BEGIN", Info{Kind: Begin}},
		{"START TRANSACTION READ ONLY", Info{Kind: Begin}},
		{"commit", Info{Kind: Commit}},
		{"ROLLBACK", Info{Kind: Rollback}},
		{"USE `my``db`", Info{Kind: Use, DB: "my`db"}},
		{"USE app", Info{Kind: Use, DB: "app"}},
		// SET STATEMENT … FOR runs its statement: never replayed as
		// session state (red-team test, session 37: one INSERT, two rows).
		{"SET STATEMENT max_statement_time=0 FOR INSERT INTO app.r(v) VALUES('once')", Info{Kind: Write}},
		{"set statement max_statement_time=5, sql_mode='a,for' for select 1", Info{Kind: Write}},
		{"SET STATEMENT max_statement_time=5 FOR SELECT * FROM t FOR UPDATE", Info{Kind: Write, Locking: true}},
		{"SET STATEMENT max_statement_time=5 FOR CREATE TEMPORARY TABLE t (a INT)", Info{Kind: Write, Pins: true}},
		{"/*#mode=readonly*/ SET STATEMENT max_statement_time=5 FOR SELECT 1", Info{Kind: Write, Hint: ReadOnly}},
		{"SET STATEMENT max_statement_time=5 FOR SET @a=1", Info{Kind: Write}},
		{"SET STATEMENT max_statement_time=5", Info{Kind: Write}},
		// A SET replayed on another connection runs again: only calls
		// that answer the same each time are replayable (session 37).
		{"SET sql_mode=CONCAT(@@sql_mode, ',STRICT_TRANS_TABLES')", Info{Kind: Set}},
		{"SET @a = 5, @b = 'x'", Info{Kind: Set}},
		{"SET @id = (SELECT MAX(id) FROM t)", Info{Kind: Write, Pins: true}},
		{"SET @n = NEXTVAL(s)", Info{Kind: Write, Pins: true}},
		{"SET @u = UUID()", Info{Kind: Write, Pins: true}},
		{"SET @v = my_func(1)", Info{Kind: Write, Pins: true}},
		{"SET @v = IF((SELECT 1), 1, 2)", Info{Kind: Write, Pins: true}},
		{"SET insert_id=1000", Info{Kind: Write, Pins: true}},
		{"SET @@session.timestamp = 5", Info{Kind: Write, Pins: true}},
		{"SET @a = NEXT VALUE FOR s", Info{Kind: Write, Pins: true}},
		{"SET @id = @@last_insert_id, @t = CURRENT_TIMESTAMP", Info{Kind: Write, Pins: true}},
		{"SET @u = CURRENT_USER", Info{Kind: Write, Pins: true}},
		{"SET PASSWORD = '*0000000000000000000000000000000000000000'", Info{Kind: Write, Pins: true}},
		{"SET @timestamp = 5, @next = 'x'", Info{Kind: Set}}, // user variables of those names
		{"SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED", Info{Kind: Set}},
		{"SET NAMES utf8mb4 COLLATE utf8mb4_unicode_ci", Info{Kind: Set, Charset: CharsetSingle}},
		{"SET autocommit=0", Info{Kind: Set, Autocommit: -1}},
		{"SET @@session.autocommit = ON", Info{Kind: Set, Autocommit: 1}},
		{"SET NAMES utf8mb4", Info{Kind: Set, Charset: CharsetSingle}},
		{"CREATE TEMPORARY TABLE x (a INT)", Info{Kind: Write, Pins: true}},
		{"LOCK TABLES t WRITE", Info{Kind: Write, Pins: true}},
		{"SELECT 1; SELECT 2", Info{Kind: Write, Multi: true, Pins: true}},
		{"SELECT 1;", Info{Kind: Read}},
		{"/*!40101 SET NAMES utf8 */", Info{Kind: Set, Charset: CharsetPairs}}, // executable comments are code
		{"(SELECT 1) UNION (SELECT 2)", Info{Kind: Read}},
		{"WITH a AS (SELECT 1) SELECT * FROM a", Info{Kind: Read}},
		{"", Info{Kind: Other}},
		// Lower case: words are upper-cased into the scanner's buffers,
		// and the previous word must survive the next one.
		{"select * from t for update", Info{Kind: Read, Locking: true}},
		{"select * from t lock in share mode", Info{Kind: Read, Locking: true}},
		{"select * from t for share", Info{Kind: Read, Locking: true}},
		{"set session autocommit = off", Info{Kind: Set, Autocommit: -1}},
		{"select get_lock('a', 1)", Info{Kind: Other, Pins: true}},
		{"start transaction", Info{Kind: Begin}},
		{"select averyveryverylongidentifierbeyondthirtytwobytes for update", Info{Kind: Read, Locking: true}},
	}
	for _, c := range cases {
		if got := Classify(c.sql); got != c.want {
			t.Errorf("Classify(%q) = %+v, want %+v", c.sql, got, c.want)
		}
	}
}

// FuzzClassify checks that the classifier never panics or loops, and that
// its safety-relevant verdicts are stable: a locking or multi statement is
// never a replica candidate, and adding a leading readwrite hint never
// makes a statement more replica-eligible. A kill (Kills, which the
// proxy refuses) stays one behind a leading hint
// or after another statement.
func FuzzClassify(f *testing.F) {
	for _, s := range []string{"SELECT 1", "SELECT * FROM t FOR UPDATE", "/*#mode=readonly*/ SELECT 1",
		"INSERT INTO t VALUES ('a;b')", "SET autocommit=0", "USE `a`", "/*!50001 SELECT 1 */", "SELECT 'unterminated",
		"/* unterminated", "SELECT 1; DROP TABLE t", "SELECT `a``b` FROM t -- x",
		"KILL HARD QUERY ID 5", "kill /**/ query user app", "EXECUTE IMMEDIATE 'KILL QUERY 5'", `PREPARE s FROM 'kill\nquery ?'`,
		"EXECUTE IMMEDIATE 'EXECUTE IMMEDIATE ''KILL QUERY 5'' '", "KILL CONNECTION 5",
		"SET STATEMENT max_statement_time=0 FOR INSERT INTO t VALUES (1)", "EXECUTE IMMEDIATE 'KI' 'LL 5'",
		"EXECUTE IMMEDIATE 0x4B494C4C2035", "SET @a = UUID()", "SET sql_mode=CONCAT(@@sql_mode, ',X')",
		"BEGIN NOT ATOMIC DO '\xbf\x5c'; KILL QUERY 5; DO '1'; END", `SELECT '\'; KILL 5; -- '`, "SET NAMES gbk"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, sql string) {
		i := Classify(sql)
		if (i.Locking || i.Multi) && i.IsReadOnlyCandidate() {
			t.Fatalf("%q: locking/multi statement is a replica candidate: %+v", sql, i)
		}
		if i.Kind == Read && i.Multi {
			t.Fatalf("%q: multi-statement classified Read", sql)
		}
		h := Classify("/*#mode=readwrite*/ " + sql)
		if h.Hint != ReadWrite {
			t.Fatalf("%q: readwrite hint lost: %+v", sql, h)
		}
		if i.Kills && !h.Kills {
			t.Fatalf("%q: kill lost behind a hint", sql)
		}
		if m := Classify("SELECT 1; " + sql); i.Kills && !m.Kills {
			t.Fatalf("%q: kill lost after another statement", sql)
		}
		// Knowing nothing of the session reads every way a known
		// session could: it flags every kill any of them flags.
		for _, l := range []Lexing{{Mode: ModeBackslashEscapes}, {Mode: ModeNoBackslashEscapes}, {Mode: ModeBackslashEscapes, Multibyte: true}, {Mode: ModeNoBackslashEscapes, Multibyte: true}} {
			if ClassifyIn(sql, l).Kills && !i.Kills {
				t.Fatalf("%q: a kill under %+v not flagged when nothing is known", sql, l)
			}
		}
		// Behind SET STATEMENT … FOR a statement is what it is alone,
		// and never session state to replay.
		if st := Classify("SET STATEMENT max_statement_time=0 FOR " + sql); st.Kills != i.Kills || st.Kind == Set || st.Kind == Read {
			t.Fatalf("%q behind SET STATEMENT: %+v, alone: %+v", sql, st, i)
		}
	})
}
