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
func killsInLiterals(sql string) bool {
	found := false
	s := scanner{src: sql}
	s.onLit = func(raw string) {
		if !found && Classify(unquote(raw)).Kills {
			found = true
		}
	}
	var scratch Info
	for s.word(&scratch) != "" {
	}
	return found
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
