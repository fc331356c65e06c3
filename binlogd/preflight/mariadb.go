package preflight

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
)

// The MariaDB versions phxgo knows: it is tested on 10.11; 10.6 and later
// have what it uses (GTID strict mode, built-in semi-sync with
// AFTER_SYNC, BINLOG MONITOR) but are untested; older ones lack some.
const (
	testedMajor, testedMinor = 10, 11
	minMajor, minMinor       = 10, 6
)

const installFix = "install MariaDB 10.11: sudo apt-get install mariadb-server mariadb-client (or scripts/install-deps.sh)"

// mariadbdCandidates are where binlogd/mysqld looks for the server, in order.
var mariadbdCandidates = []string{"mariadbd", "/usr/sbin/mariadbd", "mysqld", "/usr/sbin/mysqld"}

// CheckMariaDB checks that the MariaDB programs binlogd runs exist and
// that the server's version is one phxgo supports.
func CheckMariaDB(ctx context.Context, env *Env) []Result {
	var out []Result
	if p, err := env.LookPath("mariadb-install-db"); err != nil {
		out = append(out, fail("mariadb-install-db", installFix, "not found in PATH: binlogd runs it to create a new node's datadir"))
	} else {
		out = append(out, ok("mariadb-install-db", "%s", p))
	}
	bin := ""
	for _, c := range mariadbdCandidates {
		if p, err := env.LookPath(c); err == nil {
			bin = p
			break
		}
	}
	if bin == "" {
		return append(out, fail("mariadbd", installFix, "not found (looked for %v)", mariadbdCandidates))
	}
	v, err := env.Run(ctx, bin, "--version")
	if err != nil {
		return append(out, fail("mariadbd", installFix, "%s --version failed: %v", bin, err))
	}
	return append(out, judgeVersion(bin, string(v)))
}

var versionRE = regexp.MustCompile(`Ver (\d+)\.(\d+)\.(\d+)(-\S*)?`)

// judgeVersion reads `mariadbd --version` output, e.g.
// "mariadbd  Ver 10.11.19-MariaDB-0+deb12u1 for debian-linux-gnu on x86_64".
func judgeVersion(bin, out string) Result {
	const name = "mariadbd version"
	m := versionRE.FindStringSubmatch(out)
	if m == nil {
		return fail(name, installFix, "%s: cannot read a version from %q", bin, out)
	}
	major, _ := strconv.Atoi(m[1])
	minor, _ := strconv.Atoi(m[2])
	ver := fmt.Sprintf("%s.%s.%s", m[1], m[2], m[3])
	if !regexp.MustCompile(`(?i)mariadb`).MatchString(m[4] + out) {
		return fail(name, installFix, "%s is %s but not MariaDB (MySQL lacks MariaDB's GTIDs, which phxgo's log is made of)", bin, ver)
	}
	switch {
	case major == testedMajor && minor == testedMinor:
		return ok(name, "%s %s (tested)", bin, ver)
	case major > minMajor || (major == minMajor && minor >= minMinor):
		return warn(name, installFix, "%s %s is not the tested 10.11 series; it should work (10.6 or later) but is untested", bin, ver)
	default:
		return fail(name, installFix, "%s %s is older than 10.6, which phxgo needs", bin, ver)
	}
}
