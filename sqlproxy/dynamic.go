package sqlproxy

import "phxgo/sqlproxy/wire"

// errDynamic refuses, with -refuse-dynamic-sql, a text that runs SQL
// built or named at run time (classify.Info.Dynamic). The proxy refuses
// every KILL it can read (kill.go), but not one MariaDB builds from a
// variable or an expression: PREPARE s FROM @v, EXECUTE IMMEDIATE
// CONCAT('KI','LL QUERY ', n) ran a KILL through the proxy (red-team test,
// session 39), and a KILL of a session whose commit waits for the semi-sync
// ACK can release it with OK before it is durable. Refusing dynamic SQL
// by default would break applications that use it, so it is the
// operator's choice; the binary protocol's prepared statements
// (COM_STMT_PREPARE) are not dynamic and stay allowed.
var errDynamic = &wire.Error{Code: 1235, SQLState: "42000",
	Message: "phxgo: PREPARE and EXECUTE are refused through this proxy (-refuse-dynamic-sql: SQL built at run time could hide a KILL); use your driver's prepared statements (the binary protocol)"}

func (s *session) refuseDynamic() error {
	s.srv.metrics.errors.WithLabelValues("dynamic_sql").Inc()
	s.cl.Seq = 1
	return s.cl.WriteFlush(errDynamic.Packet())
}
