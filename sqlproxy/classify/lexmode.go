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

// pairing is how a character set that may hide a backslash or a
// backquote in a two-byte character pairs bytes: big5, cp932 and sjis,
// gbk. In them 0x5C, the backslash, and 0x60, the backquote, are valid
// second bytes, and then escape or close nothing:
//
//	SET NAMES gbk; BEGIN NOT ATOMIC DO '\xbf\x5c'; KILL QUERY 5; DO '1'; END
//
// runs the KILL, where a reading byte by byte sees \' and one string
// (red-team test, session 38). The lead and trail byte ranges are
// MariaDB's (strings/ctype-*.c: isgbkhead, isbig5head, issjishead, …).
type pairing uint8

const (
	pairNone pairing = iota // single bytes: utf8mb4, latin1, …
	pairGBK
	pairBig5
	pairSJIS // sjis and cp932
)

// lead reports whether c starts a two-byte character.
func (p pairing) lead(c byte) bool {
	switch p {
	case pairGBK:
		return 0x81 <= c && c <= 0xFE
	case pairBig5:
		return 0xA1 <= c && c <= 0xF9
	case pairSJIS:
		return 0x81 <= c && c <= 0x9F || 0xE0 <= c && c <= 0xFC
	}
	return false
}

// trail reports whether c may end a two-byte character.
func (p pairing) trail(c byte) bool {
	switch p {
	case pairGBK:
		return 0x40 <= c && c <= 0x7E || 0x80 <= c && c <= 0xFE
	case pairBig5:
		return 0x40 <= c && c <= 0x7E || 0xA1 <= c && c <= 0xFE
	case pairSJIS:
		return 0x40 <= c && c <= 0x7E || 0x80 <= c && c <= 0xFC
	}
	return false
}

// lexing is one way MariaDB may lex a text: sql_mode's quoting and the
// client character set's byte pairs.
type lexing struct {
	mode  lexMode
	pairs pairing
}

// escapes reports whether a backslash escapes inside a string or
// identifier opened by quote q.
func (s *scanner) escapes(q byte) bool {
	switch {
	case q == '`', s.lx.mode == lexNoBackslash:
		return false
	case q == '"':
		return s.lx.mode != lexAnsiQuotes
	}
	return true
}

// charLen is the length of the character at s.pos: 2 for a two-byte
// character of s's pairing, else 1.
func (s *scanner) charLen() int {
	if s.lx.pairs != pairNone && s.pos+1 < len(s.src) && s.lx.pairs.lead(s.src[s.pos]) && s.lx.pairs.trail(s.src[s.pos+1]) {
		return 2
	}
	return 1
}

// hidesInPairs reports whether some byte pairing could change how sql
// lexes: a byte that may lead a character, followed by a backslash or a
// backquote. Only then are the pairings read.
func hidesInPairs(sql string) bool {
	for i := 1; i < len(sql); i++ {
		if c := sql[i]; (c == '\\' || c == '`') && sql[i-1] >= 0x81 {
			return true
		}
	}
	return false
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
	a.Dynamic = a.Dynamic || b.Dynamic
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

// Lexing is what the proxy knows of how MariaDB lexes a session's text.
type Lexing struct {
	// Mode: NO_BACKSLASH_ESCAPES, as the last status said.
	Mode SQLMode
	// Multibyte: the session's character_set_client may be big5,
	// cp932, gbk or sjis (its handshake asked for one, or a statement
	// may have set one: Info.Charset).
	Multibyte bool
}

// ClassifyIn classifies sql for a session lexed as l says. Where the
// lexings l leaves possible disagree, the verdicts are merged toward
// safety (mergeInfo). ANSI_QUOTES is never known, so a "…" string with a
// backslash is also read as an identifier.
//
// A text of several statements is read under every mode whatever l
// says: MariaDB lexes each statement after the one before has run, and
// one of them may change sql_mode for the next
// (SET sql_mode='NO_BACKSLASH_ESCAPES'; SELECT '\'; KILL 5; -- '). A
// text that may set the character set is read with its byte pairs too.
func ClassifyIn(sql string, l Lexing) Info {
	first := lexDefault
	if l.Mode == ModeNoBackslashEscapes {
		first = lexNoBackslash
	}
	info := classifyAs(sql, lexing{mode: first})
	modes, n := [3]lexMode{first}, 1 // the sql_modes to read under
	if strings.IndexByte(sql, '\\') >= 0 {
		switch {
		case l.Mode == ModeUnknown || info.Multi:
			modes, n = [3]lexMode{lexDefault, lexAnsiQuotes, lexNoBackslash}, 3
		case l.Mode == ModeBackslashEscapes:
			modes, n = [3]lexMode{first, lexAnsiQuotes}, 2
		}
	}
	for _, m := range modes[:n] {
		if m != first {
			info = mergeInfo(info, classifyAs(sql, lexing{mode: m}))
		}
	}
	if (l.Multibyte || info.Charset == CharsetPairs) && hidesInPairs(sql) {
		for _, p := range [...]pairing{pairGBK, pairBig5, pairSJIS} {
			for _, m := range modes[:n] {
				info = mergeInfo(info, classifyAs(sql, lexing{mode: m, pairs: p}))
			}
		}
	}
	return info
}
