package node

import (
	"phxgo/binlogd/binlog"
	"phxgo/binlogd/version"
	pb "phxgo/proto"
)

// statusExtra fills in what `binlogd cluster status` shows beside the
// lease and the log: the build, whether MariaDB answers, and replica lag.
// It runs after Status has settled the role.
func (n *Node) statusExtra(st *pb.NodeStatus) {
	st.Version = version.Get().Short()
	st.MysqlUp = n.mysqlUp.Load()
	if st.Role == pb.Role_ROLE_MASTER {
		// The master's MariaDB is the source: it holds every valid
		// transaction (and the pending ones), so it trails nothing.
		return
	}
	st.LagTransactions = n.lagTransactions()
	st.LagSeconds = n.lagSecs.Load() // -1: not replicating or unknown
	if !st.MysqlUp {
		st.LagSeconds = -1
	}
}

// lagTransactions is the number of valid transactions in the log that this
// node's MariaDB has not applied: one GTID domain, and seq_no grows by one
// per valid transaction along the chain, so it is the difference of the
// sequence numbers (0 when MariaDB is at or past the log's last valid GTID).
func (n *Node) lagTransactions() uint64 {
	last, _ := n.lease.Position()
	applied := *n.applied.Load()
	if l := binlog.GTID(last); l.Seq > applied.Seq && (applied.IsZero() || l.Domain == applied.Domain) {
		return l.Seq - applied.Seq
	}
	return 0
}
