package sqlproxy

import (
	"errors"

	"phxgo/sqlproxy/wire"
)

// Sentinel errors.
var (
	// ErrConfig reports an invalid Config or flag.
	ErrConfig = errors.New("sqlproxy: invalid config")
	// ErrClosed is returned by Serve after Close.
	ErrClosed = errors.New("sqlproxy: server closed")
)

// MySQL errors the proxy itself sends. Every message starts with
// "phxgo:" so they are told apart from MariaDB's own errors, which pass
// through unchanged. The code says what the client may conclude:
//
//	1290 HY000  the statement was not run anywhere (definite failure)
//	1290 40001  the open transaction was rolled back; the statement (a
//	            COMMIT too) was not run or cannot have committed (definite)
//	1927 08S01  the backend connection broke after the statement was
//	            sent: it may or may not have taken effect (unknown)
var (
	// errNoMaster: no master with a valid lease within MasterWait. The
	// statement was not sent anywhere.
	errNoMaster = &wire.Error{Code: 1290, SQLState: "HY000", Message: "phxgo: no master with a valid lease"}
	// errTxAborted: the master changed or its connection broke inside a
	// transaction, before anything that could commit it ran; the
	// transaction was rolled back (its backend connection closed) and
	// statements fail until ROLLBACK or BEGIN (txstate.go).
	errTxAborted = &wire.Error{Code: 1290, SQLState: "40001", Message: "phxgo: transaction rolled back: master changed or backend connection lost; issue ROLLBACK"}
	// errBackend: the backend could not be reached; the statement was not run.
	errBackend = &wire.Error{Code: 1290, SQLState: "HY000", Message: "phxgo: backend connection failed; statement not run"}
	// errLost: the backend connection broke after the statement was sent:
	// its outcome is unknown (for a COMMIT: committed or rolled back).
	// MariaDB's ER_CONNECTION_KILLED with the SQLSTATE of a broken link
	// (08S01), as MaxScale answers. It was 2013, the client library's own
	// "lost connection": a server may not send a client-range code, and
	// the MariaDB C client (the mariadb CLI, and the drivers built on
	// libmariadb) showed it as "ERROR 2027 Received malformed packet",
	// hiding that the outcome is unknown (red-team test, session 39).
	errLost = &wire.Error{Code: 1927, SQLState: "08S01", Message: "phxgo: lost backend connection during statement; outcome unknown"}
	// errUnknownCommand: a command the proxy does not know the answer's
	// shape of (session.command); MariaDB's own "Unknown command".
	errUnknownCommand = &wire.Error{Code: 1047, SQLState: "08S01", Message: "phxgo: unknown command: the proxy relays COM_QUERY, COM_INIT_DB, COM_PING, COM_STMT_*, COM_FIELD_LIST, COM_STATISTICS, COM_SET_OPTION, COM_RESET_CONNECTION and COM_QUIT"}
	// errUnsupported: a command the proxy does not relay.
	errUnsupported = &wire.Error{Code: 1235, SQLState: "42000", Message: "phxgo: command not supported by the proxy"}
	// errUnknownStmt: a prepared statement id the session does not know.
	errUnknownStmt = &wire.Error{Code: 1243, SQLState: "HY000", Message: "Unknown prepared statement handler given to the proxy"}
)

// errBadHandshake is MariaDB's answer to a malformed handshake response.
var errBadHandshake = &wire.Error{Code: 1043, SQLState: "08S01", Message: "Bad handshake"}

// accessDenied is MariaDB's 1045 for user at host.
func accessDenied(user, host string, password bool) *wire.Error {
	using := "NO"
	if password {
		using = "YES"
	}
	return &wire.Error{Code: 1045, SQLState: "28000",
		Message: "Access denied for user '" + user + "'@'" + host + "' (using password: " + using + ")"}
}
