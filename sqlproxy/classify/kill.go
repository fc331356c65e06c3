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
		return killsInLiterals(s.src[s.pos:])
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
func killsInLiterals(sql string) bool {
	found := false
	s := scanner{src: sql}
	var joined strings.Builder // the run of adjacent literals so far
	runEnd := -1               // where that run's last literal ended in s.src
	s.onLit = func(raw string) {
		start := s.pos - len(raw)
		if runEnd < 0 || strings.TrimSpace(s.src[runEnd:start]) != "" {
			joined.Reset()
		}
		joined.WriteString(unquote(raw))
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

// killsInHex reports whether a hex literal in sql (0x…, X'…') spells,
// as a string, a statement that kills. Any such literal counts, quoted
// or not: a false alarm only refuses a statement that carries the bytes
// of a KILL.
func killsInHex(sql string) bool {
	for i := 0; i+2 < len(sql); i++ {
		var digits string
		switch {
		case sql[i] == '0' && (sql[i+1] == 'x' || sql[i+1] == 'X') && (i == 0 || !isWord(sql[i-1])):
			j := i + 2
			for j < len(sql) && isHex(sql[j]) {
				j++
			}
			digits = sql[i+2 : j]
		case (sql[i] == 'x' || sql[i] == 'X') && sql[i+1] == '\'' && (i == 0 || !isWord(sql[i-1])):
			end := strings.IndexByte(sql[i+2:], '\'')
			if end < 0 {
				continue
			}
			digits = sql[i+2 : i+2+end]
		default:
			continue
		}
		if len(digits) < 8 || len(digits)%2 != 0 { // "KILL" is 4 bytes
			continue
		}
		b := make([]byte, len(digits)/2)
		ok := true
		for k := range b {
			hi, lo := unhex(digits[2*k]), unhex(digits[2*k+1])
			if hi < 0 || lo < 0 {
				ok = false
				break
			}
			b[k] = byte(hi<<4 | lo)
		}
		if ok && Classify(string(b)).Kills {
			return true
		}
	}
	return false
}

func isHex(c byte) bool { return unhex(c) >= 0 }

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
// for the escapes that matter here (a doubled quote, a backslash;
// escaped control characters become a space, as they separate words).
func unquote(raw string) string {
	if len(raw) < 2 {
		return ""
	}
	q := raw[0]
	body := raw[1:]
	if body[len(body)-1] == q {
		body = body[:len(body)-1]
	}
	if strings.IndexByte(body, '\\') < 0 && strings.IndexByte(body, q) < 0 {
		return body
	}
	var b strings.Builder
	for i := 0; i < len(body); i++ {
		c := body[i]
		switch {
		case c == '\\' && i+1 < len(body):
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
