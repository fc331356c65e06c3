package hosts

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"phxgo/binlogd/config"
	"phxgo/binlogd/cpuprio"
)

// checkPriority: on host h, every thread of binlogd runs at its unit's
// Nice= and every thread of the mariadbd it started at mysql_nice's
// default (binlogd/cpuprio), so binlogd keeps answering while MariaDB
// loads the CPU. binlogd runs as the unit's User=, without
// CAP_SYS_NICE: the order must come from the unit's value and a raise.
func (l *lab) checkPriority(h *host) error {
	u, err := l.unit(h, binlogdUnit)
	if err != nil {
		return err
	}
	if u.Nice == nil {
		return fmt.Errorf("%s has no Nice=", binlogdUnit)
	}
	if err := cpuprio.CanSet(*u.Nice); err != nil {
		l.logf("priorities not checked: this test may not apply Nice=%d (%v)", *u.Nice, err)
		return nil
	}
	want := map[string]int{"binlogd": *u.Nice, "mariadbd": config.DefaultMySQLNice}
	seen := map[string]bool{}
	for _, pid := range h.binlogd.Procs() {
		comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		if err != nil {
			continue // exited meanwhile
		}
		name := strings.TrimSpace(string(comm))
		w, ok := want[name]
		if !ok {
			continue
		}
		tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
		if err != nil {
			continue
		}
		for _, t := range tasks {
			n, ok := taskNice(pid, t.Name())
			if ok && n != w {
				return fmt.Errorf("node %d: %s (pid %d) thread %s at nice %d, want %d", h.id, name, pid, t.Name(), n, w)
			}
		}
		seen[name] = true
	}
	for name := range want {
		if !seen[name] {
			return fmt.Errorf("node %d: no %s in the binlogd unit's cgroup", h.id, name)
		}
	}
	return nil
}

// taskNice is field 19 of /proc/PID/task/TID/stat; ok false if the
// thread is gone.
func taskNice(pid int, tid string) (int, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/stat", pid, tid))
	if err != nil {
		return 0, false
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 17 {
		return 0, false
	}
	n, err := strconv.Atoi(f[16])
	return n, err == nil
}
