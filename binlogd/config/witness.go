package config

import "fmt"

// Witnesses. A witness is a member whose binlogd stores and votes on the
// Paxos log but runs no MariaDB, capture, replication endpoint or
// sqlproxy: two data nodes and one witness survive any single failure
// for the price of two databases. It can never be master, so it needs
// no mysql_dir, credentials or MariaDB address; the keys are refused
// where they would mean it runs one.

// IsWitness reports whether this node is a witness (its members[] entry
// says "witness": true).
func (c *Config) IsWitness() bool { return c.Self().Witness }

// validateWitness checks the witness keys against each other: a witness
// supervises no MariaDB and advertises none, and the cluster keeps at
// least one data node that can be master.
func (c *Config) validateWitness() error {
	data := 0
	for i, m := range c.Members {
		if !m.Witness {
			data++
			continue
		}
		if m.MySQLAddr != "" || m.ProxyAddr != "" {
			return c.bad(fmt.Sprintf("members[%d].witness", i), "node %d is a witness: it runs no MariaDB and no sqlproxy, so mysql_addr and proxy_addr must be empty", m.ID)
		}
	}
	if data == 0 {
		return c.bad("members", "every member is a witness: at least one must run MariaDB to be master")
	}
	if c.IsWitness() && c.SuperviseMySQL {
		return c.bad("supervise_mysql", "node %d is a witness (members[].witness): it runs no MariaDB; set supervise_mysql false", c.ID)
	}
	return nil
}
