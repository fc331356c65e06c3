package sqlproxy

import (
	"strings"

	"phxgo/sqlproxy/classify"
	"phxgo/sqlproxy/wire"
)

// Lost transactions: what the client is told, and when the session
// enters (and leaves) its aborted state.
//
// The aborted state exists so that nothing runs as if a lost transaction
// had survived: after the proxy told the client "transaction rolled back"
// (1290/40001) for a statement inside it, every statement fails the same
// way until the client ends the transaction. It is entered only when the
// client still believes a transaction is open; a statement that itself
// ends the transaction (BEGIN, COMMIT, ROLLBACK) leaves the session clean,
// since drivers send nothing after a failed BEGIN or COMMIT.
//
//	backend lost after the statement was sent, inside a transaction:
//	  statement never commits (DML, query, SAVEPOINT)  -> 1290/40001, aborted
//	  ROLLBACK                                         -> OK (it is rolled back)
//	  may commit (COMMIT, BEGIN, DDL, CALL, unknown)   -> 2013 outcome unknown
//	master moved before the statement was sent (nothing sent):
//	  ROLLBACK -> OK; COMMIT, BEGIN -> 1290/40001; others -> 1290/40001, aborted
//	in the aborted state (nothing sent):
//	  ROLLBACK -> OK; COMMIT -> 1290/40001; BEGIN -> runs (ends the
//	  rolled-back transaction, as BEGIN implicitly ends one in MariaDB);
//	  others -> 1290/40001
//
// So 1290/40001 always means "rolled back, definitely not committed", and
// 2013 always means "outcome unknown" (see errors.go).

// abortedQuery answers a statement in the aborted state. run: the session
// left the aborted state and the statement runs normally.
func (s *session) abortedQuery(info classify.Info, sql []byte) (run bool, err error) {
	switch {
	case info.Kind == classify.Rollback && classify.Effect(string(sql)) == classify.TxRollsBack:
		s.aborted = false
		return false, s.replyOK()
	case info.Kind == classify.Begin:
		s.aborted = false
		return true, nil
	case info.Kind == classify.Commit:
		s.aborted = false // the transaction is over; the COMMIT did not run
	}
	return false, s.reply(errTxAborted)
}

// txLostBeforeSend answers a statement whose transaction was rolled back
// before it was sent (acquire closed the old master's connection and set
// aborted).
func (s *session) txLostBeforeSend(info classify.Info, sql []byte) error {
	switch info.Kind {
	case classify.Rollback:
		if classify.Effect(string(sql)) == classify.TxRollsBack {
			s.aborted = false
			return s.replyOK()
		}
	case classify.Commit, classify.Begin:
		s.aborted = false // the client's transaction is over: the statement failed, nothing is open
	}
	return s.reply(errTxAborted)
}

// lostBackend answers a command whose backend connection broke after it
// was sent and before any answer reached the client. sql is the statement
// text for COM_QUERY and COM_STMT_EXECUTE.
func (s *session) lostBackend(cmd byte, sql []byte) error {
	if !s.txOpen() && !s.pinned {
		s.inTx, s.txOver = false, false
		return s.reply(errLost)
	}
	s.inTx, s.txOver, s.pinned = false, false, false
	switch txEffect(cmd, sql) {
	case classify.TxKeeps:
		s.aborted = true
		return s.reply(errTxAborted)
	case classify.TxRollsBack:
		return s.replyOK()
	}
	return s.reply(errLost)
}

// dropBroken closes b, which broke outside a relayed statement (no
// answer owed to the client for it). An open transaction or unreplayable
// state went with it: the session enters the aborted state. lostTx
// reports that it did.
func (s *session) dropBroken(b *backend) (lostTx bool) {
	b.close()
	s.dropHeld(b)
	if !s.txOpen() && !s.pinned {
		s.inTx, s.txOver = false, false
		return false
	}
	s.inTx, s.txOver, s.pinned, s.aborted = false, false, false, true
	return true
}

// txOpen: the client may believe a transaction is open.
func (s *session) txOpen() bool { return s.inTx && !s.txOver }

// txEffect is what a command may do to an open transaction.
func txEffect(cmd byte, sql []byte) classify.TxEffect {
	switch cmd {
	case wire.ComQuery, wire.ComStmtExecute:
		return classify.Effect(string(sql))
	case wire.ComInitDB, wire.ComStmtPrepare, wire.ComStmtFetch, wire.ComStmtReset,
		wire.ComPing, wire.ComFieldList, wire.ComStatistics, wire.ComSetOption:
		return classify.TxKeeps
	}
	return classify.TxMayCommit
}

func (s *session) replyOK() error {
	s.cl.Seq = 1
	return s.cl.WriteFlush(wire.OK(0, 0, s.status()))
}

// oneShotTxSet reports whether sql is SET TRANSACTION without SESSION or
// GLOBAL: characteristics of the next transaction only (session.nextTx).
// Anything it does not recognise (a leading comment, say) stays session
// state, replayed as before.
func oneShotTxSet(sql []byte) bool {
	f := strings.Fields(string(sql[:min(len(sql), 32)]))
	return len(f) >= 2 && strings.EqualFold(f[0], "SET") && strings.EqualFold(f[1], "TRANSACTION")
}
