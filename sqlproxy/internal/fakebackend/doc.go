// Package fakebackend is an in-process MySQL-protocol server for the
// proxy's tests: it speaks the wire protocol the way MariaDB 10.11 does
// towards sqlproxy's backend dial (greeting, mysql_native_password,
// COM_QUERY, COM_INIT_DB, COM_PING, COM_RESET_CONNECTION, COM_QUIT) and
// runs a tiny SQL dialect on in-memory tables, so routing, transaction
// pinning, lost connections and cut frames can be tested without
// starting a mariadbd.
//
// What is real: framing and sequence ids (package wire), the handshake
// and its capability negotiation (CLIENT_DEPRECATE_EOF on or off), the
// server status flags of every OK and EOF (SERVER_STATUS_IN_TRANS,
// SERVER_STATUS_AUTOCOMMIT, SERVER_STATUS_IN_TRANS_READONLY) with
// MariaDB's rules for BEGIN, COMMIT, ROLLBACK, autocommit and implicit
// commits, per-connection transactions that a closed connection rolls
// back, row locks that make another connection wait (and time out with
// 1205), read_only (1290), KILL, and session variables.
//
// What it is not: a SQL engine. Statements are the few forms the proxy
// tests use (sql.go lists them); anything else is ERR 1064. There are no
// prepared statements (clients use interpolateParams) and no TLS; tests
// of those, of replication and of causal reads keep a real MariaDB.
//
// Faults are scripted per statement with Server.Hook: an error, a
// custom result, a connection dropped before the answer, after some rows
// or in the middle of a frame, or an answer held until a channel closes.
package fakebackend
