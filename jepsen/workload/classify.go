package workload

import (
	"database/sql/driver"
	"errors"
	"net"

	"github.com/go-sql-driver/mysql"

	"phxgo/jepsen/history"
)

// definiteCodes are server errors that prove a statement did not execute.
// Anything else (proxy errors about a lost backend, timeouts, a dropped
// connection) may hide a statement that ran.
var definiteCodes = map[uint16]bool{
	1044: true, // access denied to database
	1045: true, // access denied
	1062: true, // duplicate entry
	1064: true, // syntax error
	1142: true, // command denied
	1146: true, // no such table
	1205: true, // lock wait timeout (statement rolled back)
	1213: true, // deadlock (transaction rolled back)
	1290: true, // --read-only
	1792: true, // read-only transaction
}

// stmtOutcome classifies the error of an autocommit write statement.
func stmtOutcome(err error) history.Outcome {
	if err == nil {
		return history.OK
	}
	if notSent(err) {
		return history.Fail
	}
	var me *mysql.MySQLError
	if errors.As(err, &me) && definiteCodes[me.Number] {
		return history.Fail
	}
	return history.Info
}

// notSent reports errors that prove the statement never left the client:
// the connection could not be made, or the driver said ErrBadConn (which
// go-sql-driver returns only when nothing was written, so database/sql may
// retry it).
func notSent(err error) bool {
	if errors.Is(err, driver.ErrBadConn) {
		return true
	}
	var oe *net.OpError
	return errors.As(err, &oe) && oe.Op == "dial"
}

// readOutcome classifies a read's error: fail, as a read has no effect.
func readOutcome(err error) history.Outcome {
	if err == nil {
		return history.OK
	}
	return history.Fail
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
