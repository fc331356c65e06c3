package fakebackend

import (
	"strings"
)

// token is one lexical unit of a statement: a word (upper-cased in up),
// a number, a quoted string (its contents in text) or a punctuation mark.
type token struct {
	text   string
	up     string
	quoted bool
}

// lex splits sql into tokens; comments are dropped.
func lex(sql string) []token {
	var out []token
	for i := 0; i < len(sql); {
		c := sql[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '/' && i+1 < len(sql) && sql[i+1] == '*':
			j := strings.Index(sql[i+2:], "*/")
			if j < 0 {
				return out
			}
			i += j + 4
		case c == '#' || c == '-' && i+1 < len(sql) && sql[i+1] == '-':
			j := strings.IndexByte(sql[i:], '\n')
			if j < 0 {
				return out
			}
			i += j + 1
		case c == '\'' || c == '"' || c == '`':
			var b strings.Builder
			j := i + 1
			for ; j < len(sql); j++ {
				if sql[j] == '\\' && j+1 < len(sql) {
					j++
					b.WriteByte(sql[j])
					continue
				}
				if sql[j] == c {
					if j+1 < len(sql) && sql[j+1] == c {
						b.WriteByte(c)
						j++
						continue
					}
					break
				}
				b.WriteByte(sql[j])
			}
			if c == '`' {
				out = append(out, token{text: b.String(), up: strings.ToUpper(b.String())})
			} else {
				out = append(out, token{text: b.String(), quoted: true})
			}
			i = j + 1
		case isWordByte(c) || c == '@':
			j := i
			for j < len(sql) && (isWordByte(sql[j]) || sql[j] == '@' || sql[j] == '.' && j > i && sql[i] == '@') {
				j++
			}
			w := sql[i:j]
			out = append(out, token{text: w, up: strings.ToUpper(w)})
			i = j
		default:
			out = append(out, token{text: string(c), up: string(c)})
			i++
		}
	}
	return out
}

func isWordByte(c byte) bool {
	return c == '_' || c == '$' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

// parser walks the tokens of one statement.
type parser struct {
	toks []token
	i    int
}

func (p *parser) peek() string {
	if p.i < len(p.toks) {
		return p.toks[p.i].up
	}
	return ""
}

func (p *parser) next() token {
	if p.i < len(p.toks) {
		p.i++
		return p.toks[p.i-1]
	}
	return token{}
}

// accept consumes the next tokens if they are words (upper case).
func (p *parser) accept(words ...string) bool {
	if p.i+len(words) > len(p.toks) {
		return false
	}
	for j, w := range words {
		if t := p.toks[p.i+j]; t.quoted || t.up != w {
			return false
		}
	}
	p.i += len(words)
	return true
}

func (p *parser) done() bool { return p.i >= len(p.toks) || p.peek() == ";" && p.i == len(p.toks)-1 }

// name reads [db.]table.
func (p *parser) name(defDB string) (db, table string) {
	t := p.next()
	if p.peek() == "." {
		p.next()
		return t.text, p.next().text
	}
	return defDB, t.text
}

// value reads a literal: a number, a quoted string, NULL (nil) or a
// negative number.
func (p *parser) value() (*string, bool) {
	t := p.next()
	switch {
	case t.quoted:
		return &t.text, true
	case t.up == "NULL":
		return nil, true
	case t.up == "-":
		n := p.next()
		v := "-" + n.text
		return &v, true
	case t.up != "" && t.up[0] >= '0' && t.up[0] <= '9':
		return &t.text, true
	}
	return nil, false
}

// skipParens skips a parenthesised group the cursor is on.
func (p *parser) skipParens() {
	depth := 0
	for !p.done() {
		switch p.next().up {
		case "(":
			depth++
		case ")":
			depth--
			if depth == 0 {
				return
			}
		}
	}
}
