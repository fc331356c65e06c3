package classify

import "strings"

// CharsetEffect is what a statement may do to the session's
// character_set_client, which decides whether a two-byte character can
// hide a backslash from the proxy (lexmode.go: pairing).
type CharsetEffect uint8

const (
	// CharsetKeeps: nothing that sets the character set.
	CharsetKeeps CharsetEffect = iota
	// CharsetSingle: one SET statement sets it, by name, to one whose
	// characters never end in a backslash (utf8mb4, latin1, ujis, …).
	CharsetSingle
	// CharsetPairs: it may now be big5, cp932, gbk or sjis: set so by
	// name, or by a value, DEFAULT, text run by PREPARE or EXECUTE, or a
	// statement other than a lone SET whose effect the proxy cannot
	// follow.
	CharsetPairs
)

// charsetWord reports whether w, a word of a statement, may set the
// session's character set: SET NAMES, SET CHARACTER SET, SET CHARSET,
// SET [@@][SESSION.]character_set_client, also inside a compound
// statement. (A stored routine's SET NAMES ends with its CALL: MariaDB
// restores the caller's.)
func charsetWord(w string) bool {
	switch w {
	case "NAMES", "CHARSET", "CHARACTER":
		return true
	}
	return len(w) >= len("CHARACTER_SET_CLIENT") && strings.Contains(strings.ToUpper(w), "CHARACTER_SET_CLIENT")
}

// hiddenCharset is info.Charset corrected for what the words of sql do
// not show (red-team test, session 38: each of these left a session on
// gbk that the proxy took for utf8mb4):
//   - a variable named in quotes, `character_set_client` or, under
//     ANSI_QUOTES, "character_set_client", which the words skip: any
//     mention of it with a quote character in the text may set it;
//   - an executable comment, /*!NNNNN … */ or /*M!NNNNN … */, which the
//     classifier opens whatever its version while MariaDB skips one newer
//     than itself: its SET NAMES utf8mb4 may never run;
//   - several statements: which one ran last is not known here.
func hiddenCharset(sql string, info Info) CharsetEffect {
	c := info.Charset
	if c == CharsetPairs {
		return c
	}
	if strings.ContainsAny(sql, "`\"") && containsFold(sql, "character_set_client") {
		return CharsetPairs
	}
	if c == CharsetSingle && (info.Multi || strings.Contains(sql, "/*!") || containsFold(sql, "/*m!")) {
		return CharsetPairs
	}
	return c
}

// containsFold reports whether s holds sub, ASCII letters in any case.
func containsFold(s, sub string) bool {
	first := sub[0] | 0x20 // sub starts with a letter or '/'
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i]|0x20 == first && strings.EqualFold(s[i:i+len(sub)], sub) {
			return true
		}
	}
	return false
}

// charsetEffect reads the character set that w, a charsetWord of a
// statement of kind, sets, from the text after it.
func (s *scanner) charsetEffect(w string, kind Kind) CharsetEffect {
	save := *s
	defer func() { *s = save }()
	if w == "CHARACTER" {
		var scratch Info
		if s.word(&scratch) != "SET" {
			return CharsetPairs
		}
	}
	if kind != Set {
		return CharsetPairs // DDL's CHARACTER SET, a compound statement: not followed
	}
	if singleByteSafe[strings.ToLower(s.charsetName())] {
		return CharsetSingle
	}
	return CharsetPairs
}

// charsetName reads the value after a charset word: a name, quoted or
// not, after an optional = or :=; "" for anything else (a variable,
// an expression).
func (s *scanner) charsetName() string {
	skip := func() {
		for s.pos < len(s.src) && isSpace(s.src[s.pos]) {
			s.pos++
		}
	}
	skip()
	if strings.HasPrefix(s.src[s.pos:], ":=") {
		s.pos += 2
	} else if strings.HasPrefix(s.src[s.pos:], "=") {
		s.pos++
	}
	skip()
	if s.pos >= len(s.src) {
		return ""
	}
	if q := s.src[s.pos]; q == '\'' || q == '"' || q == '`' {
		end := strings.IndexByte(s.src[s.pos+1:], q)
		if end < 0 {
			return ""
		}
		return s.src[s.pos+1 : s.pos+1+end]
	}
	start := s.pos
	for s.pos < len(s.src) && (s.src[s.pos] >= 'a' && s.src[s.pos] <= 'z' || s.src[s.pos] >= 'A' && s.src[s.pos] <= 'Z' || s.src[s.pos] >= '0' && s.src[s.pos] <= '9' || s.src[s.pos] == '_') {
		s.pos++
	}
	if s.pos < len(s.src) && isWord(s.src[s.pos]) {
		return "" // @v, a.b, a non-ASCII name: not a plain name
	}
	return s.src[start:s.pos]
}

// singleByteSafe are MariaDB 10.11's client character sets none of whose
// characters has a byte under 0x80 past its first (single-byte sets, the
// UTF-8 ones and the EUC ones), so a backslash or backquote byte is
// always the character itself. DEFAULT is not here: the server's default
// could be anything.
var singleByteSafe = map[string]bool{
	"armscii8": true, "ascii": true, "binary": true, "cp1250": true, "cp1251": true, "cp1256": true,
	"cp1257": true, "cp850": true, "cp852": true, "cp866": true, "dec8": true, "eucjpms": true, "euckr": true,
	"gb2312": true, "geostd8": true, "greek": true, "hebrew": true, "hp8": true, "keybcs2": true, "koi8r": true,
	"koi8u": true, "latin1": true, "latin2": true, "latin5": true, "latin7": true, "macce": true, "macroman": true,
	"swe7": true, "tis620": true, "ujis": true, "utf8": true, "utf8mb3": true, "utf8mb4": true,
}

// PairCollations are the collation ids (as a handshake carries them) of
// the character sets whose two-byte characters may end in a backslash:
// big5, sjis, gbk, cp932.
var PairCollations = map[uint8]bool{1: true, 84: true, 13: true, 88: true, 28: true, 87: true, 95: true, 96: true}
