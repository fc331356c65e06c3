package preflight

import (
	"errors"
	"strings"
	"testing"

	"phxgo/binlogd/cpuprio"
)

func TestPriorityResult(t *testing.T) {
	denied := cpuprio.ErrPermission
	cases := []struct {
		name                     string
		have, cpuNice, mysqlNice int
		lower                    error
		status                   Status
		finding, fix             string
	}{
		{"root lowers", 0, -10, 0, nil, OK, "binlogd runs at nice -10, the MariaDB it starts at 0", ""},
		{"systemd Nice=", -10, -10, 0, nil, OK, "at nice -10", ""},
		{"no privilege", 0, -10, 0, denied, Warn, "binlogd would run at nice 0, not cpu_nice -10", "Nice=-10"},
		{"MariaDB ahead", -10, -10, -10, nil, Warn, "MariaDB would run at nice -10, binlogd at -10", `"mysql_nice" above -10`},
		{"both unprivileged at 0", 0, 0, 0, nil, Warn, "MariaDB would run at nice 0", "mysql_nice"},
		{"raise only", 0, 5, 10, nil, OK, "at nice 5, the MariaDB it starts at 10", ""},
	}
	for _, c := range cases {
		r := priorityResult(c.have, c.cpuNice, c.mysqlNice, c.lower)
		if r.Status != c.status || !strings.Contains(r.Finding, c.finding) || !strings.Contains(r.Fix, c.fix) {
			t.Errorf("%s: %+v; want %v, finding with %q, fix with %q", c.name, r, c.status, c.finding, c.fix)
		}
		if r.Status != OK && r.Fix == "" {
			t.Errorf("%s: a warning without a fix", c.name)
		}
	}
	if r := priorityResult(0, -10, 0, errors.New("x")); r.Status != Warn {
		t.Errorf("any refusal warns: %+v", r)
	}
}
