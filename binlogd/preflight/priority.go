package preflight

import (
	"fmt"

	"phxgo/binlogd/cpuprio"
)

// checkPriority says at which nice values binlogd and its MariaDB will
// run (cpu_nice, mysql_nice; README "CPU priority"). Run as the unit's
// ExecStartPre it sees the unit's Nice=, as binlogd will. Only a warn:
// the node works, but under CPU overload its MariaDB may starve binlogd
// and move the Paxos leadership.
func checkPriority(cpuNice, mysqlNice int) Result {
	have, err := cpuprio.Nice()
	if err != nil {
		return warn(checkPriorityName, "mount /proc (binlogd reads and sets its threads' nice values there)", "cannot read this process's nice value: %v", err)
	}
	var lower error
	if cpuNice < have {
		lower = cpuprio.CanSet(cpuNice)
	}
	return priorityResult(have, cpuNice, mysqlNice, lower)
}

const checkPriorityName = "cpu priority"

// priorityResult decides checkPriority's result: have is this process's
// nice value, lower the outcome of trying cpu_nice when it is lower.
func priorityResult(have, cpuNice, mysqlNice int, lower error) Result {
	runs := cpuNice
	if cpuNice < have && lower != nil {
		runs = have
	}
	switch {
	case runs != cpuNice:
		return warn(checkPriorityName,
			fmt.Sprintf("start binlogd at nice %d (systemd: Nice=%d, as scripts/systemd does), give it CAP_SYS_NICE, or set \"cpu_nice\": %d to say this is meant", cpuNice, cpuNice, have),
			"binlogd would run at nice %d, not cpu_nice %d (%v)", have, cpuNice, lower)
	case mysqlNice <= runs:
		return warn(checkPriorityName,
			fmt.Sprintf("set \"mysql_nice\" above %d (default 0, with cpu_nice -10)", runs),
			"MariaDB would run at nice %d, binlogd at %d: under CPU overload MariaDB's threads can starve binlogd", mysqlNice, runs)
	}
	return ok(checkPriorityName, "binlogd runs at nice %d, the MariaDB it starts at %d", runs, mysqlNice)
}
