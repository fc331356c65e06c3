package classify

import "strings"

// lexMode is one way MariaDB may lex quoted strings, as the session's
// sql_mode says. The modes differ only in where a backslash escapes the
// next character, so a text without a backslash lexes the same in all.
//
// The proxy cannot know the mode: a client may set it, also in ways no
// classifier could follow (a stored procedure, SET STATEMENT, the
// server's default). Read only as the default mode lexes, the statement
//
//	EXECUTE IMMEDIATE '\' KILL 5 -- '
//
// is one string, but under NO_BACKSLASH_ESCAPES the string is '\' and
// KILL 5 runs (the classifier's documented gap until session 38).
type lexMode uint8

const (
	// lexDefault: a backslash escapes in '…' and "…" strings.
	lexDefault lexMode = iota
	// lexAnsiQuotes: ANSI_QUOTES makes "…" an identifier, where a
	// backslash is an ordinary character; it still escapes in '…'.
	lexAnsiQuotes
	// lexNoBackslash: NO_BACKSLASH_ESCAPES; a backslash escapes nowhere
	// (with or without ANSI_QUOTES: they then lex alike).
	lexNoBackslash
)

// escapes reports whether a backslash escapes inside a string or
// identifier opened by quote q.
func (s *scanner) escapes(q byte) bool {
	switch {
	case q == '`', s.mode == lexNoBackslash:
		return false
	case q == '"':
		return s.mode != lexAnsiQuotes
	}
	return true
}

// mergeInfo joins two readings of one text toward safety: what one
// reading flags (a kill, pinning, several statements, a locking read)
// stands, and readings that disagree on what the statement is make it a
// write on the master that keeps its connection (never replayed as a
// SET, never sent to a replica).
func mergeInfo(a, b Info) Info {
	if a == b {
		return a
	}
	a.Kills = a.Kills || b.Kills
	a.Pins = a.Pins || b.Pins
	a.Multi = a.Multi || b.Multi
	a.Locking = a.Locking || b.Locking
	if a.Kind != b.Kind {
		a.Kind, a.Pins = Write, true
	}
	if a.Hint != b.Hint {
		a.Hint = ReadWrite
	}
	if a.Autocommit != b.Autocommit {
		a.Autocommit = max(a.Autocommit, b.Autocommit) // 1 may commit: Effect's safe side
	}
	if a.Multi && (a.Kind == Read || a.Kind == Set || a.Kind == Use) {
		a.Kind = Write
	}
	if a.Kind == Set && a.Pins {
		a.Kind = Write
	}
	return a
}

// SQLMode is what the proxy knows of a session's sql_mode: MariaDB tells
// whether NO_BACKSLASH_ESCAPES is on in the status flags of every OK and
// EOF packet, and nothing of ANSI_QUOTES.
type SQLMode uint8

const (
	// ModeUnknown: no answer seen yet; every lexing is considered.
	ModeUnknown SQLMode = iota
	// ModeBackslashEscapes: the last status said NO_BACKSLASH_ESCAPES is off.
	ModeBackslashEscapes
	// ModeNoBackslashEscapes: the last status said it is on.
	ModeNoBackslashEscapes
)

// ModeOfStatus is the SQLMode a server status's NO_BACKSLASH_ESCAPES
// flag says.
func ModeOfStatus(noBackslashEscapes bool) SQLMode {
	if noBackslashEscapes {
		return ModeNoBackslashEscapes
	}
	return ModeBackslashEscapes
}

// ClassifyIn classifies sql for a session in mode. Where the lexings
// that mode leaves possible disagree, the verdicts are merged toward
// safety (mergeInfo). ANSI_QUOTES is never known, so a "…" string with a
// backslash is also read as an identifier.
//
// A text of several statements is read under every mode whatever mode
// says: MariaDB lexes each statement after the one before has run, and
// one of them may change sql_mode for the next
// (SET sql_mode='NO_BACKSLASH_ESCAPES'; SELECT '\'; KILL 5; -- ').
func ClassifyIn(sql string, mode SQLMode) Info {
	first := lexDefault
	if mode == ModeNoBackslashEscapes {
		first = lexNoBackslash
	}
	info := classifyAs(sql, first)
	if strings.IndexByte(sql, '\\') < 0 {
		return info // every mode lexes it the same
	}
	switch {
	case mode == ModeUnknown || info.Multi:
		for _, m := range [...]lexMode{lexDefault, lexAnsiQuotes, lexNoBackslash} {
			if m != first {
				info = mergeInfo(info, classifyAs(sql, m))
			}
		}
	case mode == ModeBackslashEscapes:
		info = mergeInfo(info, classifyAs(sql, lexAnsiQuotes))
	}
	return info
}
