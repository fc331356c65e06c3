package replserver

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
)

// MySQL error codes the endpoint sends.
const (
	erUnknownSystemVariable = 1193
	erNotSupportedYet       = 1235
	erMasterFatalReading    = 1236 // ER_MASTER_FATAL_ERROR_READING_BINLOG
	erParse                 = 1064
)

// reply is the answer to one query: an OK (names == nil and err == nil),
// a result set, or an error.
type reply struct {
	names []string
	rows  [][]any // string or nil (NULL) cells
	err   *mysql.MyError
}

func okReply() reply { return reply{} }

func errReply(code uint16, msg string) reply {
	return reply{err: mysql.NewError(code, msg)}
}

// session is what a connection remembers between queries: the user
// variables a replica sets before COM_BINLOG_DUMP.
type session struct {
	// vars maps a lower-case user variable name (without @) to its value.
	// A variable assigned NULL is present with ok=false.
	vars map[string]userVar
	// sysvars are the endpoint's answers to @@name (lower case).
	sysvars map[string]string
	now     func() time.Time
	// account is who logged in: the outside account may run only a
	// replica's connect queries (outside.go).
	account account
	// varBytes is the names' and values' length over vars (maxVarBytes).
	varBytes int
}

// A connection's user variables are bounded: a replica sets about ten
// short ones before its dump, but nothing else stopped a client holding
// an outside replica's password from storing any number of any size
// (200 SETs of 1,000 variables of 1 KB took binlogd from 43 MB to 896 MB;
// red-team test, session 37).
const (
	maxUserVars = 64
	maxVarBytes = 64 << 10
)

// maxSelectExprs bounds a SELECT's expressions, and maxVarBytes its
// row: the row is built whole, and SELECT @a,@a,… of one 64 KB variable,
// 5,000 times in a 15 KB query, took binlogd to 1 GB and 12 s of CPU
// (third red-team pass, session 37). A replica selects one or two.
const maxSelectExprs = 64

// erOutOfResources is ER_OUT_OF_RESOURCES, MariaDB's answer when a
// session asks for more memory than it may have.
const erOutOfResources = 1041

type userVar struct {
	val string
	ok  bool // false: NULL
}

func newSession(sysvars map[string]string, now func() time.Time) *session {
	return &session{vars: map[string]userVar{}, sysvars: sysvars, now: now}
}

// userVar returns @name's value and whether it was set to non-NULL.
func (s *session) userVar(name string) (string, bool) {
	v, ok := s.vars[strings.ToLower(name)]
	return v.val, ok && v.ok
}

// hiddenFromShow are variables SHOW VARIABLES pretends not to know. A
// replica with rpl_semi_sync_slave_enabled probes them; an empty answer
// makes it fall back to asynchronous replication, so it never expects the
// semi-sync packet header (binlogd's endpoint is asynchronous).
func hiddenFromShow(name string) bool { return strings.HasPrefix(name, "rpl_semi_sync") }

// answer runs one COM_QUERY. Unknown SETs succeed (a replica sets many
// session variables that do not concern a binlog server); unknown SELECT
// and SHOW statements get a clear error; ok reports whether the query was
// understood, for logging.
func (s *session) answer(q string) (r reply, understood bool) {
	q = strings.TrimSpace(q)
	q = strings.TrimSpace(strings.TrimRight(q, ";"))
	up := asciiUpper(q)
	switch {
	case q == "":
		return errReply(erParse, "Query was empty"), false
	case hasWord(up, "SET"):
		return s.set(q[3:])
	case hasWord(up, "SELECT"):
		return s.selectExprs(q[6:])
	case hasWord(up, "SHOW"):
		return s.show(q)
	case hasWord(up, "KILL"):
		// go-mysql's syncer kills its dump connection this way on Close; the
		// dump notices the closed socket by itself.
		return okReply(), true
	}
	return errReply(erNotSupportedYet, "binlogd replication endpoint does not support this statement: "+trunc(q)), false
}

func hasWord(up, w string) bool {
	if !strings.HasPrefix(up, w) {
		return false
	}
	return len(up) == len(w) || up[len(w)] == ' ' || up[len(w)] == '\t' || up[len(w)] == '\n' || up[len(w)] == '@'
}

func trunc(q string) string {
	if len(q) > 200 {
		return q[:200] + "..."
	}
	return q
}

// set handles SET a=b[, c=d]: user variables are stored, everything else
// (NAMES, session system variables) is accepted and ignored.
func (s *session) set(rest string) (reply, bool) {
	if u := asciiUpper(strings.TrimSpace(rest)); strings.HasPrefix(u, "NAMES ") || strings.HasPrefix(u, "CHARACTER SET ") {
		return okReply(), true // the replica's SET NAMES utf8mb4; events are bytes
	}
	understood := true
	for _, item := range splitTopLevel(rest) {
		name, expr, ok := strings.Cut(item, "=")
		name = strings.TrimSpace(name)
		if ok {
			name = strings.TrimSuffix(name, ":") // SET @a := 1
		}
		if !ok || !strings.HasPrefix(name, "@") || strings.HasPrefix(name, "@@") {
			understood = false // SET NAMES, SET @@session.x=..: harmless, ignored
			continue
		}
		v, isNull, known := s.eval(strings.TrimSpace(expr))
		if !known {
			understood = false
		}
		if r, ok := s.setVar(strings.ToLower(unquoteIdent(name[1:])), userVar{val: v, ok: !isNull}); !ok {
			return r, true
		}
	}
	return okReply(), understood
}

// setVar stores @name within maxUserVars and maxVarBytes; a variable
// refused is not stored (the SET's earlier ones stay, as its items are
// assigned in turn).
func (s *session) setVar(name string, v userVar) (reply, bool) {
	old, had := s.vars[name]
	bytes := s.varBytes + len(v.val)
	if had {
		bytes -= len(old.val)
	} else {
		bytes += len(name)
	}
	if (!had && len(s.vars) >= maxUserVars) || bytes > maxVarBytes {
		return errReply(erOutOfResources, fmt.Sprintf(
			"binlogd replication endpoint: a connection keeps at most %d user variables of %d bytes in all (names and values); a replica needs a few short ones", maxUserVars, maxVarBytes)), false
	}
	s.vars[name], s.varBytes = v, bytes
	return reply{}, true
}

// selectExprs handles SELECT e1, e2 [LIMIT n] over constants, user and
// system variables, UNIX_TIMESTAMP(), VERSION() and friends.
func (s *session) selectExprs(rest string) (reply, bool) {
	rest = strings.TrimSpace(rest)
	if i := strings.LastIndex(asciiUpper(rest), " LIMIT "); i >= 0 && !strings.ContainsAny(rest[i:], "'\"") {
		rest = rest[:i]
	}
	exprs := splitTopLevel(rest)
	if len(exprs) > maxSelectExprs {
		return errReply(erOutOfResources, fmt.Sprintf("binlogd replication endpoint: a SELECT of at most %d expressions (a replica asks for one or two)", maxSelectExprs)), true
	}
	r := reply{names: make([]string, len(exprs))}
	row := make([]any, len(exprs))
	size := 0
	for i, e := range exprs {
		e = strings.TrimSpace(e)
		r.names[i] = e
		if j := strings.LastIndex(asciiUpper(e), " AS "); j > 0 && !strings.ContainsAny(e[j:], "'\"(") {
			r.names[i] = unquoteIdent(strings.TrimSpace(e[j+4:]))
			e = strings.TrimSpace(e[:j])
		}
		v, isNull, known := s.eval(e)
		if !known {
			if strings.HasPrefix(e, "@@") {
				return errReply(erUnknownSystemVariable, "Unknown system variable '"+sysvarName(e)+"'"), false
			}
			return errReply(erNotSupportedYet, "binlogd replication endpoint cannot evaluate: "+trunc(e)), false
		}
		if size += len(r.names[i]) + len(v); size > maxVarBytes {
			return errReply(erOutOfResources, fmt.Sprintf("binlogd replication endpoint: a result of at most %d bytes", maxVarBytes)), true
		}
		if isNull {
			row[i] = nil
		} else {
			row[i] = v
		}
	}
	r.rows = [][]any{row}
	return r, true
}

// eval evaluates a constant expression; known is false when it could not.
func (s *session) eval(e string) (val string, isNull, known bool) {
	up := asciiUpper(e)
	switch {
	case e == "":
		return "", true, false
	case up == "NULL":
		return "", true, true
	case up == "UNIX_TIMESTAMP()":
		return strconv.FormatInt(s.now().Unix(), 10), false, true
	case up == "VERSION()":
		return s.sysvars["version"], false, true
	case up == "DATABASE()" || up == "USER()" || up == "CURRENT_USER()":
		return "", true, true
	case up == "CONNECTION_ID()":
		return "0", false, true
	case strings.HasPrefix(e, "@@"):
		v, ok := s.sysvars[sysvarName(e)]
		return v, false, ok
	case strings.HasPrefix(e, "@"):
		v, ok := s.vars[strings.ToLower(unquoteIdent(e[1:]))]
		return v.val, !ok || !v.ok, true
	case len(e) >= 2 && (e[0] == '\'' || e[0] == '"') && e[len(e)-1] == e[0]:
		return unquoteString(e), false, true
	}
	if _, err := strconv.ParseFloat(e, 64); err == nil {
		return e, false, true
	}
	return "", true, false
}

// sysvarName turns @@GLOBAL.Name / @@session.name / @@name into "name".
func sysvarName(e string) string {
	n := strings.ToLower(strings.TrimPrefix(e, "@@"))
	for _, p := range []string{"global.", "session.", "local."} {
		n = strings.TrimPrefix(n, p)
	}
	return unquoteIdent(n)
}

// show handles SHOW [GLOBAL|SESSION] VARIABLES [LIKE 'pattern'].
func (s *session) show(q string) (reply, bool) {
	f := strings.Fields(q)
	i := 1
	if i < len(f) && (strings.EqualFold(f[i], "GLOBAL") || strings.EqualFold(f[i], "SESSION")) {
		i++
	}
	if i >= len(f) || !strings.EqualFold(f[i], "VARIABLES") {
		return errReply(erNotSupportedYet, "binlogd replication endpoint does not support: "+trunc(q)), false
	}
	pattern := "%"
	if i+1 < len(f) {
		if !strings.EqualFold(f[i+1], "LIKE") || i+2 >= len(f) {
			return errReply(erNotSupportedYet, "binlogd replication endpoint supports only SHOW VARIABLES LIKE '...': "+trunc(q)), false
		}
		pattern = unquoteString(strings.Join(f[i+2:], " "))
	}
	r := reply{names: []string{"Variable_name", "Value"}}
	for _, name := range sortedKeys(s.sysvars) {
		if !hiddenFromShow(name) && likeMatch(strings.ToLower(pattern), name) {
			r.rows = append(r.rows, []any{name, s.sysvars[name]})
		}
	}
	return r, true
}

// splitTopLevel splits at commas outside quotes and parentheses.
func splitTopLevel(s string) []string {
	var out []string
	depth, start := 0, 0
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == '\\' {
				i++
			} else if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"' || c == '`':
			quote = c
		case c == '(':
			depth++
		case c == ')':
			depth--
		case c == ',' && depth == 0:
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

// unquoteString strips SQL quotes and backslash escapes from 'x' or "x";
// anything else is returned trimmed.
func unquoteString(s string) string {
	s = strings.TrimSpace(s)
	if len(s) < 2 || (s[0] != '\'' && s[0] != '"') || s[len(s)-1] != s[0] {
		return s
	}
	q := s[0]
	in := s[1 : len(s)-1]
	var b strings.Builder
	for i := 0; i < len(in); i++ {
		c := in[i]
		if c == '\\' && i+1 < len(in) {
			i++
			switch in[i] {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case '0':
				b.WriteByte(0)
			default:
				b.WriteByte(in[i])
			}
			continue
		}
		if c == q && i+1 < len(in) && in[i+1] == q {
			i++
		}
		b.WriteByte(c)
	}
	return b.String()
}

func unquoteIdent(s string) string {
	s = strings.TrimSpace(s)
	if len(s) >= 2 && (s[0] == '`' || s[0] == '\'' || s[0] == '"') && s[len(s)-1] == s[0] {
		return s[1 : len(s)-1]
	}
	return s
}

// likeMatch is SQL LIKE with % and _ (no escapes), case already folded.
// Greedy with backtracking to the last %: O(len(p)*len(s)).
func likeMatch(p, s string) bool {
	pi, si, star, mark := 0, 0, -1, 0
	for si < len(s) {
		switch {
		case pi < len(p) && (p[pi] == '_' || p[pi] == s[si]):
			pi++
			si++
		case pi < len(p) && p[pi] == '%':
			star, mark = pi, si
			pi++
		case star >= 0:
			pi = star + 1
			mark++
			si = mark
		default:
			return false
		}
	}
	for pi < len(p) && p[pi] == '%' {
		pi++
	}
	return pi == len(p)
}

// asciiUpper upper-cases ASCII letters only, so byte offsets found in the
// result are valid in the input (strings.ToUpper rewrites invalid UTF-8).
func asciiUpper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'a' <= c && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}
