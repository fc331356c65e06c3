package replserver

import (
	"fmt"
	"strings"

	"github.com/go-mysql-org/go-mysql/mysql"
)

// What the outside replicas' account may do. A MariaDB replica's IO
// thread sends, before COM_REGISTER_SLAVE and COM_BINLOG_DUMP, only
// queries of three shapes (sql/slave.cc, 10.11):
//
//	SELECT UNIX_TIMESTAMP()                      SELECT @@GLOBAL.gtid_domain_id
//	SHOW VARIABLES LIKE 'SERVER_ID'              SELECT @master_binlog_checksum
//	SET @master_heartbeat_period= 1000000000     SET @slave_connect_state='0-1-41'
//	SET @master_binlog_checksum= @@global.binlog_checksum, SET @mariadb_slave_capability=4, ...
//
// so the account may run exactly those shapes: SET of user variables
// (and the session's skip_replication or NAMES), SELECT of nothing but
// UNIX_TIMESTAMP(), @user and @@system variables, SHOW VARIABLES [LIKE].
// Anything else, SELECT 1 included, is ER_SPECIFIC_ACCESS_DENIED_ERROR:
// the account is for replication, not a way to probe the endpoint.

// erSpecificAccessDenied is ER_SPECIFIC_ACCESS_DENIED_ERROR (SQLSTATE 42000).
const erSpecificAccessDenied = 1227

// MinOutsideServerID is the lowest server_id an outside replica may dump
// with. phxgo's own ids are below it: each member's MariaDB uses its node
// id, capture 1000+id, the endpoints 2000+id (rolectl). A replica with a
// member's server_id would silently skip that member's transactions
// (replicate_same_server_id=0), and one with a capture or endpoint id
// would end that connection's dump.
const MinOutsideServerID = 3000

// outsideMayQuery reports whether the outside account may run q: one of
// the shapes a replica's IO thread sends.
func outsideMayQuery(q string) bool {
	q = strings.TrimSpace(strings.TrimRight(strings.TrimSpace(q), ";"))
	up := asciiUpper(q)
	switch {
	case hasWord(up, "SET"):
		rest := strings.TrimSpace(up[3:])
		if strings.HasPrefix(rest, "NAMES ") {
			return true
		}
		for _, item := range splitTopLevel(q[3:]) {
			name, _, ok := strings.Cut(item, "=")
			name = strings.TrimSuffix(strings.TrimSpace(name), ":")
			if !ok || !isUserVar(name) && !strings.EqualFold(name, "skip_replication") && !strings.EqualFold(name, "@@session.skip_replication") {
				return false
			}
		}
		return true
	case hasWord(up, "SELECT"):
		rest := q[6:]
		if i := strings.LastIndex(asciiUpper(rest), " LIMIT "); i >= 0 {
			rest = rest[:i] // SELECT @@version LIMIT 1
		}
		for _, e := range splitTopLevel(rest) {
			e = strings.TrimSpace(e)
			if !isUserVar(e) && !isSysVar(e) && asciiUpper(e) != "UNIX_TIMESTAMP()" {
				return false
			}
		}
		return true
	case hasWord(up, "SHOW"):
		f := strings.Fields(up)
		i := 1
		if i < len(f) && (f[i] == "GLOBAL" || f[i] == "SESSION") {
			i++
		}
		return i < len(f) && f[i] == "VARIABLES"
	}
	return false
}

// isUserVar: @name or @`name`, not @@.
func isUserVar(e string) bool {
	return len(e) > 1 && e[0] == '@' && e[1] != '@' && isVarName(e[1:])
}

// isSysVar: @@name or @@GLOBAL.name, nothing after it.
func isSysVar(e string) bool {
	return len(e) > 2 && strings.HasPrefix(e, "@@") && isVarName(e[2:])
}

// isVarName: letters, digits, _ $ . and backquotes only: a bare variable,
// no expression.
func isVarName(s string) bool {
	for _, c := range []byte(s) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '$' || c == '.' || c == '`') {
			return false
		}
	}
	return s != ""
}

// outsideRefused is the answer to a query or command the outside account
// may not run.
func outsideRefused(user, what string) *mysql.MyError {
	return mysql.NewError(erSpecificAccessDenied, fmt.Sprintf(
		"Access denied; account '%s' of binlogd's replication endpoint may only replicate (a replica's connect queries, COM_REGISTER_SLAVE, COM_BINLOG_DUMP): %s refused", user, what))
}

// outsideServerIDRefusal is why an outside dump with serverID may not
// start ("" when it may).
func outsideServerIDRefusal(serverID uint32) string {
	if serverID >= MinOutsideServerID {
		return ""
	}
	return fmt.Sprintf("binlogd: an outside replica needs a server_id of at least %d (got %d): lower ones belong to the cluster's own MariaDBs, capture and endpoints; SET GLOBAL server_id=N on the replica, then START SLAVE", MinOutsideServerID, serverID)
}
