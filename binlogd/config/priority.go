package config

// Priority sets the CPU priority (Unix nice values) of binlogd and of
// the MariaDB it supervises. binlogd must answer within milliseconds
// (Paxos heartbeats, votes, the commit ACK) while its own MariaDB may
// keep every core busy; at equal priority an overloaded host starved
// binlogd for hundreds of milliseconds and the Paxos leadership moved
// again and again (binlogd/cpuprio).
type Priority struct {
	// cpu_nice: binlogd lowers its own nice value to this at start
	// (default -10). Lowering needs root or CAP_SYS_NICE; without it
	// binlogd keeps the value it was started with and warns (under
	// systemd: Nice= in the unit, which scripts/systemd does).
	CPUNice *int `json:"cpu_nice,omitempty"`
	// mysql_nice: the nice value of the mariadbd binlogd starts
	// (supervise_mysql; default 0) and of its other helper processes
	// (event hooks, mariadb-backup and mbstream for a reseed,
	// mariadb-install-db). Raising it above binlogd's needs no
	// privilege.
	MySQLNice *int `json:"mysql_nice,omitempty"`
}

// DefaultCPUNice and DefaultMySQLNice are cpu_nice's and mysql_nice's
// defaults: binlogd's threads then weigh about 9.3 times a MariaDB
// thread's in the kernel's fair scheduler.
const (
	DefaultCPUNice   = -10
	DefaultMySQLNice = 0
)

// CPUNiceOrDefault is cpu_nice, DefaultCPUNice when unset.
func (p Priority) CPUNiceOrDefault() int {
	if p.CPUNice == nil {
		return DefaultCPUNice
	}
	return *p.CPUNice
}

// MySQLNiceOrDefault is mysql_nice, DefaultMySQLNice when unset.
func (p Priority) MySQLNiceOrDefault() int {
	if p.MySQLNice == nil {
		return DefaultMySQLNice
	}
	return *p.MySQLNice
}

func (c *Config) checkPriority() error {
	for _, k := range []struct {
		key string
		v   int
	}{{"cpu_nice", c.CPUNiceOrDefault()}, {"mysql_nice", c.MySQLNiceOrDefault()}} {
		if k.v < -20 || k.v > 19 {
			return c.bad(k.key, "%d must be a nice value between -20 (highest priority) and 19", k.v)
		}
	}
	return nil
}
