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
			if got := ClassifyIn(c.sql, m).Kills; got != want {
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
		i := ClassifyIn(c.sql, c.mode)
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
	if i := ClassifyIn(sql, ModeBackslashEscapes); i.Kind != Set {
		t.Fatalf("backslash escapes on: %+v, want Set (one SET of a string)", i)
	}
	for _, m := range []SQLMode{ModeUnknown, ModeNoBackslashEscapes} {
		if i := ClassifyIn(sql, m); i.Kind == Set || !i.Pins {
			t.Fatalf("mode %d: %+v, want a pinned non-Set", m, i)
		}
	}
}
