package mysqld

import (
	"errors"
	"fmt"
	"strings"
)

// ErrBadAppDatabase means an app_databases pattern is empty or would
// reach a system schema.
var ErrBadAppDatabase = errors.New("mysqld: bad app_databases pattern")

// DefaultAppDatabases are the databases the app account may use when the
// credentials file names none: "app" and "app_*" for applications, and
// what the project's tests, Jepsen workloads and benchmarks create
// (sbtest, jepsen, hostsapp, e2e, hostile, big, tlsdb, stmtdb, test,
// test_*). A new test or workload should use app or app_<name>.
//
// They are MariaDB GRANT patterns, matched like LIKE: '%' is any string,
// '_' any one character, and '\' escapes either. A db-level grant on '%'
// also matches the mysql schema (checked on 10.11), which is why the app
// account gets an explicit list, never a wildcard for everything.
var DefaultAppDatabases = []string{`app`, `app\_%`, `sbtest`, `jepsen`, `hostsapp`, `e2e`, `hostile`, `big`, `tlsdb`, `stmtdb`, `test`, `test\_%`}

// systemSchemas must never match an app_databases pattern: a grant there
// is a grant on the grant tables, the server's own state, or both.
var systemSchemas = []string{"mysql", "sys", "performance_schema", "information_schema"}

// ValidateAppDatabases checks that every pattern is non-empty, has no
// backquote or NUL (it is spliced into a GRANT as a quoted identifier),
// and matches none of the system schemas.
func ValidateAppDatabases(patterns []string) error {
	for _, p := range patterns {
		if p == "" || strings.ContainsAny(p, "`\x00") || len(p) > 64 {
			return fmt.Errorf("%w: %q (want 1..64 characters, no backquote)", ErrBadAppDatabase, p)
		}
		for _, s := range systemSchemas {
			if likeMatch(p, s) {
				return fmt.Errorf("%w: %q matches the system schema %q; name application databases explicitly", ErrBadAppDatabase, p, s)
			}
		}
	}
	return nil
}

// likeMatch reports whether s matches the GRANT/LIKE pattern p
// (case-insensitive, as database names are on a case-insensitive check
// here: being too strict only refuses a pattern).
func likeMatch(p, s string) bool {
	p, s = strings.ToLower(p), strings.ToLower(s)
	var match func(pi, si int) bool
	match = func(pi, si int) bool {
		for pi < len(p) {
			switch c := p[pi]; {
			case c == '%':
				for k := si; k <= len(s); k++ {
					if match(pi+1, k) {
						return true
					}
				}
				return false
			case c == '_':
				if si >= len(s) {
					return false
				}
			case c == '\\' && pi+1 < len(p):
				pi++
				if si >= len(s) || s[si] != p[pi] {
					return false
				}
			default:
				if si >= len(s) || s[si] != c {
					return false
				}
			}
			pi++
			si++
		}
		return si == len(s)
	}
	return match(0, 0)
}

// quoteIdent makes a backquoted identifier; callers have refused
// backquotes already, doubling them is belt and braces.
func quoteIdent(s string) string { return "`" + strings.ReplaceAll(s, "`", "``") + "`" }
