package classify

import "testing"

// TestClassifyInModes: a KILL that only the session's sql_mode reveals
// (the string around it ends at a backslash under NO_BACKSLASH_ESCAPES,
// or the quotes are an identifier's under ANSI_QUOTES) is flagged in
// every mode that could lex it so, and data that merely holds an escaped
// quote and the word kill is not refused once the mode is known.
func TestClassifyInModes(t *testing.T) {
	const (
		unknown = ModeUnknown
		on      = ModeBackslashEscapes
		off     = ModeNoBackslashEscapes
	)
	kills := []struct {
		sql   string
		modes []SQLMode
	}{
		// NO_BACKSLASH_ESCAPES: '\' is a whole string.
		{`BEGIN NOT ATOMIC DO '\'; KILL QUERY 5; DO '1'; END`, []SQLMode{unknown, off}},
		{`SELECT '\'; KILL QUERY 5; -- '`, []SQLMode{unknown, off}}, // one SELECT where backslashes escape
		{`EXECUTE IMMEDIATE '\' 'KILL QUERY 5'`, []SQLMode{unknown, on, off}},
		// ANSI_QUOTES: "\" is an identifier, which a backslash does not escape.
		{`BEGIN NOT ATOMIC DECLARE "\" INT; KILL QUERY 5; BEGIN DECLARE "y" INT; END; END`, []SQLMode{unknown, on, off}},
		// The mode changes within one multi-statement text.
		{`SET sql_mode='NO_BACKSLASH_ESCAPES'; DO '\'; KILL QUERY 5; -- '`, []SQLMode{unknown, on, off}},
		{`SET STATEMENT sql_mode='' FOR DO '\' ; KILL 5 -- '`, []SQLMode{unknown, on, off}},
	}
	for _, c := range kills {
		for _, m := range []SQLMode{unknown, on, off} {
			want := false
			for _, w := range c.modes {
				want = want || w == m
			}
			if got := ClassifyIn(c.sql, Lexing{Mode: m}).Kills; got != want {
				t.Errorf("ClassifyIn(%q, %d).Kills = %v, want %v", c.sql, m, got, want)
			}
		}
	}

	// Data, in the mode that reads it as data: no refusal, and a read
	// stays a replica candidate.
	data := []struct {
		sql  string
		mode SQLMode
		kind Kind
	}{
		{`SELECT 'Don\'t', 'how to kill a process'`, on, Read},
		{`INSERT INTO t VALUES ('it\'s', 'kill -9 is rude')`, on, Write},
		{`SELECT "say \"hi\"" , 'kill'`, off, Read},
		{`SELECT 'C:\dir\', 'kill'`, off, Read},
		{`SELECT 'a\\', 'kill'`, on, Read},
	}
	for _, c := range data {
		i := ClassifyIn(c.sql, Lexing{Mode: c.mode})
		if i.Kills || i.Kind != c.kind || c.kind == Read && !i.IsReadOnlyCandidate() {
			t.Errorf("ClassifyIn(%q, %d) = %+v, want kind %v and no kill", c.sql, c.mode, i, c.kind)
		}
	}
}

// TestSetReplayUnderModes: a SET that is one statement in one lexing and
// a SET followed by an INSERT in another is never replayed (the proxy
// replays Set statements on every new backend connection).
func TestSetReplayUnderModes(t *testing.T) {
	sql := `SET @a = '\'; INSERT INTO t VALUES (1); -- '`
	if i := ClassifyIn(sql, Lexing{Mode: ModeBackslashEscapes}); i.Kind != Set {
		t.Fatalf("backslash escapes on: %+v, want Set (one SET of a string)", i)
	}
	for _, m := range []SQLMode{ModeUnknown, ModeNoBackslashEscapes} {
		if i := ClassifyIn(sql, Lexing{Mode: m}); i.Kind == Set || !i.Pins {
			t.Fatalf("mode %d: %+v, want a pinned non-Set", m, i)
		}
	}
}

// TestClassifyInPairs: under big5, cp932, gbk and sjis a KILL hidden by a
// two-byte character ending in a backslash or a backquote is flagged when
// the session may use one, and UTF-8 text is read byte by byte otherwise.
func TestClassifyInPairs(t *testing.T) {
	on := ModeBackslashEscapes
	for _, sql := range []string{
		"BEGIN NOT ATOMIC DO '\xbf\x5c'; KILL QUERY 5; DO '1'; END", // gbk, big5
		"BEGIN NOT ATOMIC DO '\x95\x5c'; KILL QUERY 5; DO '1'; END", // sjis, cp932 (0x95 leads there, not in big5)
		"BEGIN NOT ATOMIC SELECT 1 AS \xbf`; KILL QUERY 5; SELECT 1 AS `x`; END",
	} {
		if ClassifyIn(sql, Lexing{Mode: on}).Kills {
			t.Errorf("%q flagged in a single-byte session: the test shows nothing", sql)
		}
		if !ClassifyIn(sql, Lexing{Mode: on, Multibyte: true}).Kills {
			t.Errorf("%q: kill not flagged in a multibyte session", sql)
		}
		if !Classify(sql).Kills {
			t.Errorf("%q: kill not flagged when nothing is known", sql)
		}
		// The same text after a SET NAMES in one multi-statement text.
		if !ClassifyIn("SET NAMES gbk; "+sql, Lexing{Mode: on}).Kills {
			t.Errorf("SET NAMES gbk; %q: kill not flagged", sql)
		}
	}
	utf8 := "INSERT INTO t VALUES ('価格€\\'s', 'kill')"
	if i := ClassifyIn(utf8, Lexing{Mode: on}); i.Kills || i.Kind != Write {
		t.Errorf("%q in a utf8mb4 session: %+v", utf8, i)
	}

	effects := []struct {
		sql  string
		want CharsetEffect
	}{
		{"SET NAMES utf8mb4", CharsetSingle},
		{"set names 'latin1' collate 'latin1_swedish_ci'", CharsetSingle},
		{"SET character_set_client = utf8", CharsetSingle},
		{"SET @@SESSION.character_set_client='ujis'", CharsetSingle},
		{"SET NAMES gbk", CharsetPairs},
		{"SET NAMES `big5`", CharsetPairs},
		{"SET CHARACTER SET sjis", CharsetPairs},
		{"SET CHARSET cp932", CharsetPairs},
		{"SET character_set_client = @cs", CharsetPairs},
		{"SET NAMES DEFAULT", CharsetPairs},
		{"SET NAMES utf8mb4; SET NAMES gbk", CharsetPairs},
		{"SET NAMES utf8mb4; SELECT 1", CharsetPairs}, // several statements: not followed
		{"BEGIN NOT ATOMIC SET NAMES utf8mb4; END", CharsetPairs},
		{"EXECUTE IMMEDIATE @q", CharsetPairs},
		{"PREPARE s FROM @q", CharsetPairs},
		{"CREATE TABLE t (c TEXT CHARACTER SET utf8mb4)", CharsetPairs},
		{"SELECT 'SET NAMES gbk'", CharsetKeeps},
		{"SELECT CHARACTER_LENGTH('a')", CharsetKeeps},
		{"CALL p()", CharsetKeeps}, // a routine's SET NAMES ends with it
		// Red-team test, session 38: each left a session on gbk that
		// the proxy took for single-byte.
		{"SET `character_set_client` = 28", CharsetPairs},
		{"SET @@session.`character_set_client`=28", CharsetPairs},
		{`SET "character_set_client" = 28`, CharsetPairs}, // ANSI_QUOTES
		{"SET NAMES utf8mb4, `character_set_client` = gbk", CharsetPairs},
		{"SET @x=1 /*M!999999 , NAMES utf8mb4 */", CharsetPairs},
		{"SET @x=1 /*!99999 , NAMES utf8mb4 */", CharsetPairs},
		{"SELECT 'character_set_client'", CharsetKeeps},
	}
	for _, c := range effects {
		if got := Classify(c.sql).Charset; got != c.want {
			t.Errorf("Classify(%q).Charset = %d, want %d", c.sql, got, c.want)
		}
	}
}
