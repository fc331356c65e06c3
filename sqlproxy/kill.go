package sqlproxy

import "phxgo/sqlproxy/wire"

// errKill refuses every KILL (classify.Info.Kills) and COM_PROCESS_KILL.
// On MariaDB 10.11, measured: KILL [HARD] QUERY of a session whose COMMIT
// waits for the semi-sync ACK ends the wait and that client gets OK
// although the transaction is not in the Paxos log yet; KILL CONNECTION
// of such a session gives its own client a lost connection, but when it
// led a binlog group commit, the commits queued behind it were released
// with OK too (seen twice). A master change or crash then cuts them from
// the binlog: acknowledged writes lost. Every client shares the backend
// account, so any client could do it to any other. A client cancels its
// own statement by closing its connection (what go-sql-driver does on a
// cancelled context). The statement was not run.
var errKill = &wire.Error{Code: 1235, SQLState: "42000",
	Message: "phxgo: KILL is refused through the proxy (killing a session whose commit waits for replication can make it, or commits grouped with it, report success before they are durable); close the connection to cancel a statement"}

// refuseKill answers a kill with errKill.
func (s *session) refuseKill() error {
	s.srv.metrics.errors.WithLabelValues("kill").Inc()
	s.cl.Seq = 1
	return s.cl.WriteFlush(errKill.Packet())
}
