package classify

import "strings"

// nextKills reports whether the statement after a ";" is a KILL,
// leaving s where it was (only multi-statement texts pay).
func (s *scanner) nextKills() bool {
	save := *s
	defer func() { *s = save }()
	var scratch Info
	switch s.word(&scratch) {
	case "KILL":
		return true
	case "PREPARE", "EXECUTE":
		return killsInLiterals(s.src[s.pos:], s.lx)
	}
	return false
}

// killsInLiterals reports whether a string literal in sql (the text of a
// PREPARE … FROM '…' or EXECUTE IMMEDIATE '…') is, or holds, a KILL. Text built at run time (FROM @var, CONCAT(…)) cannot be seen
// here; doc.go says so.
//
// MariaDB joins adjacent literals ('KI' 'LL 5' is 'KILL 5') and reads a
// hex literal (0x4B…, X'4B…') as a string where it wants one: both are
// checked as MariaDB would read them (red-team test, session 37: both ran
// a KILL through EXECUTE IMMEDIATE).
func killsInLiterals(sql string, lx lexing) bool {
	found := false
	s := scanner{src: sql, lx: lx}
	var joined strings.Builder // the run of adjacent literals so far
	runEnd := -1               // where that run's last literal ended in s.src
	s.onLit = func(raw string) {
		start := s.pos - len(raw)
		if runEnd < 0 || !blank(s.src[runEnd:start]) {
			joined.Reset()
		}
		joined.WriteString(s.unquote(raw))
		runEnd = s.pos
		if !found && Classify(joined.String()).Kills {
			found = true
		}
	}
	var scratch Info
	for s.word(&scratch) != "" {
	}
	return found || killsInHex(sql)
}

// blank reports whether gap, the text between two literals, holds only
// white space and comments: MariaDB joins the literals across it.
func blank(gap string) bool {
	for i := 0; i < len(gap); {
		switch c := gap[i]; {
		case isSpace(c):
			i++
		case c == '#' || strings.HasPrefix(gap[i:], "--") && (i+2 == len(gap) || isSpace(gap[i+2])):
			nl := strings.IndexByte(gap[i:], '\n')
			if nl < 0 {
				return true
			}
			i += nl + 1
		case strings.HasPrefix(gap[i:], "/*"):
			end := strings.Index(gap[i+2:], "*/")
			if end < 0 {
				return true
			}
			i += 2 + end + 2
		default:
			return false
		}
	}
	return true
}

// killsInHex reports whether a hex or bit literal in sql (0x…, X'…',
// 0b…, B'…') spells, as a string, a statement that kills. Any such
// literal counts, quoted or not: a false alarm only refuses a statement
// that carries the bytes of a KILL.
func killsInHex(sql string) bool {
	for i := 0; i+2 < len(sql); i++ {
		if i > 0 && isWord(sql[i-1]) {
			continue
		}
		c, next := sql[i]|0x20, sql[i+1] // lower case
		var b []byte
		switch {
		case sql[i] == '0' && (next|0x20) == 'x':
			b = decodeDigits(sql[i+2:], 4, false)
		case c == 'x' && next == '\'':
			b = decodeDigits(sql[i+2:], 4, true)
		case sql[i] == '0' && (next|0x20) == 'b':
			b = decodeDigits(sql[i+2:], 1, false)
		case c == 'b' && next == '\'':
			b = decodeDigits(sql[i+2:], 1, true)
		}
		if len(b) >= 4 && Classify(string(b)).Kills { // "KILL" is 4 bytes
			return true
		}
	}
	return false
}

// decodeDigits reads the hex (bits 4) or binary (bits 1) digits at the
// start of s, up to a closing quote when quoted, into bytes as MariaDB
// does (left-padded with zero bits to whole bytes); nil when there are
// none or a quoted literal is not closed by one.
func decodeDigits(s string, bits uint, quoted bool) []byte {
	n := 0
	for n < len(s) && digitValue(s[n], bits) >= 0 {
		n++
	}
	if n == 0 || quoted && (n == len(s) || s[n] != '\'') {
		return nil
	}
	total := uint(n) * bits
	out := make([]byte, (total+7)/8)
	pos := uint(len(out))*8 - total // the zero bits of the left pad
	for k := 0; k < n; k++ {
		v := digitValue(s[k], bits)
		for j := int(bits) - 1; j >= 0; j-- {
			if v>>uint(j)&1 == 1 {
				out[pos/8] |= 0x80 >> (pos % 8)
			}
			pos++
		}
	}
	return out
}

func digitValue(c byte, bits uint) int {
	if bits == 1 {
		switch c {
		case '0':
			return 0
		case '1':
			return 1
		}
		return -1
	}
	return unhex(c)
}

func unhex(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// unquote turns a quoted literal's text into its value, as MariaDB does
// for the escapes that matter here (a doubled quote, and a backslash
// where s's lexing escapes with it; escaped control characters become a
// space, as they separate words). A two-byte character is copied whole.
func (s *scanner) unquote(raw string) string {
	if len(raw) < 2 {
		return ""
	}
	q := raw[0]
	escapes := s.escapes(q)
	body := raw[1:]
	if body[len(body)-1] == q {
		body = body[:len(body)-1]
	}
	if (!escapes || strings.IndexByte(body, '\\') < 0) && strings.IndexByte(body, q) < 0 {
		return body
	}
	var b strings.Builder
	for i := 0; i < len(body); i++ {
		c := body[i]
		switch {
		case s.lx.pairs.lead(c) && i+1 < len(body) && s.lx.pairs.trail(body[i+1]):
			b.WriteByte(c)
			b.WriteByte(body[i+1])
			i++
		case c == '\\' && escapes && i+1 < len(body):
			i++
			switch c = body[i]; c {
			case 'n', 't', 'r', 'b', 'Z', '0':
				c = ' ' // white space to the lexer: 'KILL\nQUERY 5'
			}
			b.WriteByte(c)
		case c == q && i+1 < len(body) && body[i+1] == q:
			i++
			b.WriteByte(q)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}
