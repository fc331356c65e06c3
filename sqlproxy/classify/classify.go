package classify

import (
	"strings"
	"unsafe"
)

// Kind is what a statement does, as far as routing cares.
type Kind uint8

const (
	Other    Kind = iota // anything else: goes to the master
	Read                 // SELECT/SHOW/DESCRIBE/EXPLAIN/WITH…SELECT: may go to a replica
	Write                // DML/DDL and whatever changes data
	Begin                // BEGIN, START TRANSACTION
	Commit               // COMMIT
	Rollback             // ROLLBACK (not ROLLBACK TO SAVEPOINT)
	Use                  // USE db
	Set                  // SET … (session state, replayable)
)

func (k Kind) String() string {
	return [...]string{"other", "read", "write", "begin", "commit", "rollback", "use", "set"}[k]
}

// Hint is a Cetus routing comment.
type Hint uint8

const (
	NoHint    Hint = iota
	ReadWrite      // /*#mode=readwrite*/: the master
	ReadOnly       // /*#mode=readonly*/: a replica if one is healthy
)

// Info is the classification of one COM_QUERY text.
type Info struct {
	Kind Kind
	Hint Hint
	// Locking: SELECT … FOR UPDATE / LOCK IN SHARE MODE / FOR SHARE.
	Locking bool
	// Autocommit is +1 for SET autocommit=1, -1 for =0, 0 otherwise.
	Autocommit int8
	// Pins: the statement creates session state that cannot be replayed
	// on another connection (temporary tables, LOCK TABLES, named locks,
	// SQL PREPARE, user variables assigned in a query, …). The session
	// keeps its backend connection from now on.
	Pins bool
	// Multi: more than one statement (multi-statements): treated as Write.
	Multi bool
	// DB is the database of a USE statement.
	DB string
	// Charset is what the text may do to the session's
	// character_set_client (charset.go): the proxy reads the byte pairs
	// of big5, cp932, gbk and sjis in a session that may use one
	// (Lexing.Multibyte).
	Charset CharsetEffect
	// Kills: the text holds a KILL statement of any form, directly or in
	// a literal that PREPARE or EXECUTE IMMEDIATE runs (kill.go). On
	// MariaDB a KILL of a session whose COMMIT waits for the semi-sync
	// ACK can release that commit (KILL QUERY) or the commits grouped
	// behind it (KILL CONNECTION of the group's leader) with OK before
	// the write is in the Paxos log.
	Kills bool
	// Dynamic: the text runs SQL that is not in it as a literal, or may
	// not be: the words PREPARE or EXECUTE anywhere outside quotes
	// (PREPARE s FROM @v, EXECUTE IMMEDIATE CONCAT(…), EXECUTE s, in a
	// compound statement or a routine body too). Kills cannot see a KILL
	// built at run time; a proxy started with -refuse-dynamic-sql
	// refuses these texts.
	Dynamic bool
}

// Classify looks at a statement text. It never fails: what it does not
// understand is Other, which routes to the master.
//
// It reads sql under every sql_mode MariaDB could lex it in (ClassifyIn
// with ModeUnknown).
func Classify(sql string) Info {
	return ClassifyIn(sql, Lexing{Mode: ModeUnknown, Multibyte: true})
}

// classifyAs classifies sql as MariaDB lexes it under lx.
func classifyAs(sql string, lx lexing) Info {
	var info Info
	s := scanner{src: sql, lx: lx}
	first := s.word(&info)
	switch first {
	case "SELECT", "SHOW", "DESCRIBE", "DESC", "EXPLAIN", "WITH", "VALUES", "TABLE", "(":
		info.Kind = Read
	case "INSERT", "UPDATE", "DELETE", "REPLACE", "CREATE", "DROP", "ALTER", "TRUNCATE",
		"RENAME", "GRANT", "REVOKE", "CALL", "LOAD", "OPTIMIZE", "ANALYZE", "REPAIR", "FLUSH", "DO", "HANDLER", "INSTALL", "UNINSTALL", "PURGE", "RESET", "XA", "SAVEPOINT", "RELEASE", "CHECKSUM", "CHECK":
		info.Kind = Write
	case "BEGIN":
		info.Kind = Begin
	case "START":
		if s.word(&info) == "TRANSACTION" {
			info.Kind = Begin
		}
	case "COMMIT":
		info.Kind = Commit
	case "ROLLBACK":
		info.Kind = Rollback
	case "USE":
		info.Kind = Use
		info.DB = s.ident()
	case "SET":
		info.Kind = Set
		if s.nextIs("STATEMENT") {
			// SET STATEMENT var=value[, …] FOR <statement>: the
			// statement runs with the settings for its own duration. It
			// is not session state, and replaying it on another
			// connection ran its statement again (red-team test, session
			// 37: one INSERT made two rows). Classified by what it runs.
			return setStatement(sql, info, lx)
		}
	case "KILL":
		info.Kind = Write
		info.Kills = true
	case "PREPARE", "EXECUTE":
		info.Kind, info.Pins, info.Charset = Write, true, CharsetPairs
		info.Kills = killsInLiterals(sql, lx)
		info.Dynamic = true
	case "LOCK", "UNLOCK", "DEALLOCATE":
		info.Kind, info.Pins = Write, true
	}
	prev := ""
	for {
		w := s.word(&info)
		if w == "" {
			break
		}
		if info.Kind == Set && volatileInSet(w) {
			info.Pins = true // replayed, it would answer differently or act again
		}
		if charsetWord(w) {
			info.Charset = max(info.Charset, s.charsetEffect(w, info.Kind))
		}
		switch w {
		case "PREPARE", "EXECUTE":
			info.Dynamic = true // in a compound statement, a routine body, after a ';'
		case "KILL":
			// KILL is a reserved word: unquoted, it is a KILL statement
			// wherever it stands, in a compound statement (BEGIN NOT
			// ATOMIC … END, IF … END IF) or in the body of a routine,
			// event or trigger being created (red-team test, session 37:
			// BEGIN NOT ATOMIC KILL QUERY n; END killed another client's
			// query).
			info.Kills = true
		case "(":
			if info.Kind == Set && !replayableCall[prev] {
				// A subquery, or a call that may read data, change it or
				// answer differently each time (NEXTVAL, UUID, a stored
				// function): replayed on another connection it would run
				// again. The session keeps its connection instead.
				info.Pins = true
			}
		case ";":
			if s.rest() {
				info.Multi = true
				info.Kills = info.Kills || s.nextKills()
			}
		case "UPDATE":
			if prev == "FOR" {
				info.Locking = true
			}
		case "SHARE":
			if prev == "FOR" || prev == "IN" {
				info.Locking = true
			}
		case "INTO":
			if info.Kind == Read {
				info.Kind = Write // SELECT … INTO OUTFILE/@var
			}
			if s.nextHasPrefix("@") {
				info.Pins = true // user variables set by a query: no replay sets them
			}
		case "TEMPORARY":
			info.Pins = true
		case "GET_LOCK", "RELEASE_LOCK", "RELEASE_ALL_LOCKS", "IS_USED_LOCK", "IS_FREE_LOCK",
			"LAST_INSERT_ID", "FOUND_ROWS", "ROW_COUNT", "NEXTVAL", "SETVAL", "LASTVAL", "SLEEP", "MASTER_GTID_WAIT":
			if info.Kind == Read {
				info.Kind = Other // session- or master-dependent: master
			}
			if strings.HasSuffix(w, "_LOCK") || strings.HasSuffix(w, "_LOCKS") {
				info.Pins = true
			}
		case "NEXT", "PREVIOUS":
			// NEXT VALUE FOR s advances a sequence; PREVIOUS VALUE FOR
			// s is the session's last: the master's (third red-team
			// pass, session 37: a replica answered 1290 and NULL).
			if info.Kind == Read && s.nextIs("VALUE") {
				info.Kind = Other
			}
		case ":=":
			info.Pins = true // user variable assigned in a query
		case "AUTOCOMMIT", "@@AUTOCOMMIT", "@@SESSION.AUTOCOMMIT", "@@LOCAL.AUTOCOMMIT", "SESSION.AUTOCOMMIT", "LOCAL.AUTOCOMMIT":
			if info.Kind == Set {
				info.Autocommit = s.autocommitValue()
			}
		case "ONLY":
			// SET TRANSACTION READ ONLY / START TRANSACTION READ ONLY: a
			// transaction still goes to the master.
		}
		prev = w
	}
	if info.Multi {
		if info.Kind == Read || info.Kind == Set || info.Kind == Use {
			info.Kind = Write
		}
		info.Pins = true // state changes inside cannot be tracked
	}
	if info.Kind == Set && info.Pins {
		info.Kind = Write
	}
	info.Charset = hiddenCharset(sql, info)
	return info
}

// volatileInSet reports whether w, a word of a SET, makes the SET
// unfit to replay on another connection: a value read without
// parentheses that differs there (CURRENT_TIMESTAMP, NEXT VALUE FOR s,
// @@last_insert_id), or a variable that acts once (insert_id, timestamp:
// replayed, SET insert_id=1000 made a later INSERT fail with a duplicate
// key; red-team test, session 37), or a password.
func volatileInSet(w string) bool {
	if strings.HasPrefix(w, "@@") {
		w = w[2:]
		for _, scope := range []string{"SESSION.", "LOCAL.", "GLOBAL."} {
			w = strings.TrimPrefix(w, scope)
		}
	}
	return volatileSetWords[w]
}

var volatileSetWords = map[string]bool{
	"INSERT_ID": true, "LAST_INSERT_ID": true, "IDENTITY": true, "TIMESTAMP": true, "RAND_SEED1": true, "RAND_SEED2": true,
	"WARNING_COUNT": true, "ERROR_COUNT": true, "LAST_GTID": true, "GTID_SEQ_NO": true,
	"CURRENT_TIMESTAMP": true, "CURRENT_DATE": true, "CURRENT_TIME": true, "CURRENT_USER": true, "CURRENT_ROLE": true,
	"LOCALTIME": true, "LOCALTIMESTAMP": true, "UTC_TIMESTAMP": true, "UTC_DATE": true, "UTC_TIME": true,
	"NEXT": true, "PREVIOUS": true, "PASSWORD": true,
}

// replayableCall are the functions a SET may call and still be replayed
// on another connection: they read only their arguments (session
// variables included, which the replay has set by then, in order) and
// answer the same each time. Connectors send such SETs at connect
// (Connector/J: SET sql_mode=CONCAT(@@sql_mode, ',STRICT_TRANS_TABLES')).
var replayableCall = map[string]bool{
	"CONCAT": true, "CONCAT_WS": true, "REPLACE": true, "IF": true, "IFNULL": true, "COALESCE": true,
	"LOWER": true, "UPPER": true, "LCASE": true, "UCASE": true, "TRIM": true, "LTRIM": true, "RTRIM": true,
	"CAST": true, "CONVERT": true, "SUBSTRING": true, "SUBSTR": true, "LEFT": true, "RIGHT": true, "LENGTH": true,
}

// setStatement classifies SET STATEMENT … FOR <statement> (info: what
// the leading comment hints said) by its statement: the settings change
// nothing outside it, and a KILL, PREPARE or EXECUTE inside is what it
// would be alone. Never Set (it must not be replayed), never Read (the
// settings could make a read do more, as max_statement_time could not,
// but a FOR UPDATE could hide behind parentheses): Write at least.
func setStatement(sql string, info Info, lx lexing) Info {
	s := scanner{src: sql, lx: lx}
	var scratch Info
	for w := s.word(&scratch); w != ""; w = s.word(&scratch) {
		if w == "FOR" { // the settings are name=constant: the first FOR ends them
			inner := Classify(s.src[s.pos:]) // s.src: executable comments opened
			inner.Hint = info.Hint
			if inner.Kind == Read || inner.Kind == Set || inner.Kind == Use {
				inner.Kind = Write
			}
			return inner
		}
	}
	info.Kind = Write // no FOR: MariaDB refuses it; to the master
	return info
}

// nextHasPrefix reports whether the next word starts with p, leaving s
// where it was.
func (s *scanner) nextHasPrefix(p string) bool {
	save := *s
	var scratch Info
	has := strings.HasPrefix(s.word(&scratch), p)
	*s = save
	return has
}

// nextIs reports whether the next word is w (upper case), leaving s
// where it was. (It compares before it puts s back: a word may live in
// s's buffers, which the restore overwrites.)
func (s *scanner) nextIs(w string) bool {
	save := *s
	var scratch Info
	is := s.word(&scratch) == w
	*s = save
	return is
}

// IsReadOnlyCandidate reports whether i may go to a replica at all
// (outside a transaction, before hints and percentages).
func (i Info) IsReadOnlyCandidate() bool {
	return i.Kind == Read && !i.Locking && !i.Pins && !i.Multi
}

type scanner struct {
	src string
	pos int
	// up holds upper-cased words so that word does not allocate; two
	// buffers in turn keep the previous word (Classify's prev) intact.
	up   [2][32]byte
	turn uint8
	// onLit, when set, is given every quoted string (with its quotes)
	// that word skips, back-quoted identifiers excepted.
	onLit func(raw string)
	// lx is how quoted strings and multibyte characters are lexed
	// (lexmode.go).
	lx lexing
}

// word returns the next token, upper-cased: a keyword/identifier, ":=",
// ";" or "(" ; strings, numbers, quoted identifiers and other punctuation
// are skipped. Comments are skipped, recording a Cetus hint.
func (s *scanner) word(info *Info) string {
	for s.pos < len(s.src) {
		c := s.src[s.pos]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			s.pos++
		case c == '#':
			s.skipLine()
		case c == '-' && strings.HasPrefix(s.src[s.pos:], "--") && (s.pos+2 == len(s.src) || isSpace(s.src[s.pos+2])):
			s.skipLine()
		case c == '/' && strings.HasPrefix(s.src[s.pos:], "/*"):
			end := strings.Index(s.src[s.pos+2:], "*/")
			var body string
			if end < 0 {
				body, s.pos = s.src[s.pos+2:], len(s.src)
			} else {
				body, s.pos = s.src[s.pos+2:s.pos+2+end], s.pos+2+end+2
			}
			s.hint(body, info)
		case c == '\'' || c == '"' || c == '`':
			start := s.pos
			s.skipQuoted(c)
			if s.onLit != nil && c != '`' {
				s.onLit(s.src[start:s.pos])
			}
		case c == ';' || c == '(':
			s.pos++
			return string(c)
		case c == ':' && s.pos+1 < len(s.src) && s.src[s.pos+1] == '=':
			s.pos += 2
			return ":="
		case isWord(c):
			start := s.pos
			for s.pos < len(s.src) && isWord(s.src[s.pos]) {
				s.pos += s.charLen()
			}
			s.pos = min(s.pos, len(s.src))
			return s.upper(s.src[start:s.pos])
		default:
			s.pos++
		}
	}
	return ""
}

// upper returns w upper-cased (ASCII letters only, as keywords are):
// w itself when it has no lower-case letter, else a view of one of s.up,
// valid until the next-but-one call. A word longer than s.up is no
// keyword and is returned as is.
func (s *scanner) upper(w string) string {
	i := 0
	for i < len(w) && (w[i] < 'a' || w[i] > 'z') {
		i++
	}
	if i == len(w) || len(w) > len(s.up[0]) {
		return w
	}
	s.turn ^= 1
	b := &s.up[s.turn]
	copy(b[:], w)
	for ; i < len(w); i++ {
		if c := b[i]; c >= 'a' && c <= 'z' {
			b[i] = c - ('a' - 'A')
		}
	}
	return unsafe.String(&b[0], len(w))
}

// hint reads /*#mode=readwrite*/ and /*#mode=readonly*/. MariaDB's
// executable comments (/*! … */, /*M! … */) are scanned as code.
func (s *scanner) hint(body string, info *Info) {
	if strings.HasPrefix(body, "!") || strings.HasPrefix(body, "M!") {
		s.src = s.src[:s.pos] + " " + strings.TrimLeft(body, "M!0123456789") + " " + s.src[s.pos:]
		return
	}
	b := strings.ToLower(strings.Join(strings.Fields(body), ""))
	switch b {
	case "#mode=readwrite":
		info.Hint = ReadWrite
	case "#mode=readonly":
		if info.Hint == NoHint {
			info.Hint = ReadOnly
		}
	}
}

func (s *scanner) skipLine() {
	for s.pos < len(s.src) && s.src[s.pos] != '\n' {
		s.pos++
	}
}

func (s *scanner) skipQuoted(q byte) {
	s.pos++
	for s.pos < len(s.src) {
		c := s.src[s.pos]
		if n := s.charLen(); n > 1 {
			s.pos += n // a two-byte character, which may end in '\\' or '`'
			continue
		}
		if c == '\\' && s.escapes(q) {
			s.pos += 2
			continue
		}
		s.pos++
		if c == q {
			if s.pos < len(s.src) && s.src[s.pos] == q {
				s.pos++
				continue
			}
			return
		}
	}
	if s.pos > len(s.src) {
		s.pos = len(s.src)
	}
}

// rest reports whether another token follows.
func (s *scanner) rest() bool {
	save := *s
	var scratch Info
	w := s.word(&scratch)
	*s = save
	return w != ""
}

// ident reads a possibly back-quoted identifier (for USE).
func (s *scanner) ident() string {
	for s.pos < len(s.src) && isSpace(s.src[s.pos]) {
		s.pos++
	}
	if s.pos < len(s.src) && s.src[s.pos] == '`' {
		var b strings.Builder
		s.pos++
		for s.pos < len(s.src) {
			c := s.src[s.pos]
			s.pos++
			if c == '`' {
				if s.pos < len(s.src) && s.src[s.pos] == '`' {
					b.WriteByte('`')
					s.pos++
					continue
				}
				return b.String()
			}
			b.WriteByte(c)
		}
		return b.String()
	}
	start := s.pos
	for s.pos < len(s.src) && (isWord(s.src[s.pos]) || s.src[s.pos] == '$') {
		s.pos++
	}
	return s.src[start:s.pos]
}

func (s *scanner) autocommitValue() int8 {
	var scratch Info
	for {
		w := s.word(&scratch)
		switch w {
		case "1", "ON", "TRUE":
			return 1
		case "0", "OFF", "FALSE":
			return -1
		case "", ";", ",":
			return 0
		}
	}
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

func isWord(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80 || c == '@' || c == '.'
}
