package sqlproxy

import "phxgo/sqlproxy/wire"

// errKillQuery refuses a statement kill (classify.Info.KillsQuery). On
// MariaDB, KILL QUERY of a session whose COMMIT waits for the semi-sync
// ACK ends the wait and the client gets OK although the transaction is
// not in the Paxos log yet: a master change or crash then cuts it from
// the binlog, an acknowledged write lost. Every client shares the
// backend account, so any client could do it to any other. KILL
// CONNECTION is let through: the killed client sees a lost connection
// (outcome unknown), never a false OK. The statement was not run.
var errKillQuery = &wire.Error{Code: 1235, SQLState: "42000",
	Message: "phxgo: KILL QUERY is refused (it can make a commit waiting for replication report success before it is durable); use KILL CONNECTION"}

// refuseKill answers a statement kill with errKillQuery.
func (s *session) refuseKill() error {
	s.srv.metrics.errors.WithLabelValues("kill_query").Inc()
	s.cl.Seq = 1
	return s.cl.WriteFlush(errKillQuery.Packet())
}
