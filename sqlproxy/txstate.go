package sqlproxy

import (
	"strings"

	"phxgo/sqlproxy/classify"
	"phxgo/sqlproxy/wire"
)

// The session's transaction and routing state is a pure state machine:
// txState.Step takes an event (a backend's answer, a lost connection, a
// statement arriving in the aborted state, …) and returns the next state
// and the actions the session must take (reply this, close or keep that
// backend). The session (session.go, route.go, stmt.go, idletx.go)
// executes the actions and feeds the events; it never sets the state
// itself. txstate_test.go lists every transition and steps random event
// sequences against a model MariaDB to check the invariants:
//
//   - a transaction never spans two backend connections: a backend that
//     may hold an open transaction or unreplayable state is kept by the
//     session or closed (which rolls it back), never pooled or held for
//     another statement elsewhere;
//   - while the session is in a transaction, pinned or with autocommit
//     off, every statement goes to the master (never to a replica);
//   - the transaction pin ends only when a backend said not-in-transaction
//     (its status flags) or the connection that held it is gone.
//
// The server's status flags are the authority on whether a transaction
// is open (BEGIN, START TRANSACTION [READ ONLY], COMMIT, ROLLBACK, SET
// autocommit, implicit commits of DDL and LOCK TABLES all show in the
// SERVER_STATUS_IN_TRANS and SERVER_STATUS_AUTOCOMMIT flags of the OK or
// EOF that ends the statement). Statement classes matter only where no
// server can answer: a connection lost after the statement was sent, and
// the aborted state.
//
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
//	  may commit (COMMIT, BEGIN, DDL, CALL, unknown)   -> 1927/08S01 outcome unknown
//	master moved before the statement was sent (nothing sent):
//	  ROLLBACK -> OK; COMMIT, BEGIN -> 1290/40001; others -> 1290/40001, aborted
//	in the aborted state (nothing sent):
//	  ROLLBACK -> OK; COMMIT -> 1290/40001; BEGIN -> runs (ends the
//	  rolled-back transaction, as BEGIN implicitly ends one in MariaDB);
//	  others -> 1290/40001
//
// So 1290/40001 always means "rolled back, definitely not committed", and
// 1927/08S01 always means "outcome unknown" (see errors.go).

// txState is the transaction and routing state of one session.
type txState struct {
	inTx          bool // the last status had SERVER_STATUS_IN_TRANS
	txOver        bool // inTx, but an error since said the transaction was rolled back (40001)
	autocommitOff bool // the last status lacked SERVER_STATUS_AUTOCOMMIT
	aborted       bool // a transaction was lost: fail until the client ends it
	pinned        bool // unreplayable session state: keep the connection
}

// txEventKind is what happened.
type txEventKind uint8

const (
	// evStmt: a client command arrives, before it is routed (stmt, rollsBack).
	evStmt txEventKind = iota
	// evReply: a backend answered a command (status, hasStatus, rolledBack).
	evReply
	// evPins: a statement created session state no replay can rebuild
	// (classify.Info.Pins, or the replay log is full).
	evPins
	// evReset: COM_RESET_CONNECTION succeeded: no unreplayable state left.
	evReset
	// evMoved: the statement must go elsewhere than the held backend.
	evMoved
	// evLostBeforeSend: after evMoved lost a transaction, the statement
	// that met it was not sent (stmt, rollsBack).
	evLostBeforeSend
	// evLostAfterSend: the backend broke after the command was sent and
	// before any answer reached the client (effect).
	evLostAfterSend
	// evBroken: the backend broke outside a relayed command.
	evBroken
	// evIdleTxFired: the idle-in-transaction timer closed the backend.
	evIdleTxFired
	// evRelease: a command finished; where does its backend go.
	evRelease
	// evFinish: the client left; where does the held backend go.
	evFinish
	numTxEvents
)

func (k txEventKind) String() string {
	return [...]string{"stmt", "reply", "pins", "reset", "moved", "lost_before_send",
		"lost_after_send", "broken", "idle_tx_fired", "release", "finish"}[k]
}

// txEvent is one input of txState.Step.
type txEvent struct {
	kind txEventKind
	// evStmt, evLostBeforeSend: the statement's class; rollsBack: it is a
	// ROLLBACK that ends the transaction (classify.TxRollsBack).
	stmt      classify.Kind
	rollsBack bool
	// evLostAfterSend: what the lost command may have done to a transaction.
	effect classify.TxEffect
	// evReply: the status flags of the answer's final OK/EOF, if it had
	// one; rolledBack: it was an ERR with SQLSTATE 40001 (a deadlock or
	// another proxy's "rolled back": an ERR carries no status).
	status     uint16
	hasStatus  bool
	rolledBack bool
}

// stmtEvent is evStmt for a statement of kind k with text sql (sql is
// rescanned only for a ROLLBACK, the one kind whose form matters).
func stmtEvent(kind txEventKind, k classify.Kind, sql []byte) txEvent {
	ev := txEvent{kind: kind, stmt: k}
	if k == classify.Rollback {
		ev.rollsBack = classify.Effect(string(sql)) == classify.TxRollsBack
	}
	return ev
}

// txActions is what the session must do after a step (a set: the session
// applies them in a fixed order, close before reply).
type txActions uint16

const (
	// actRun: send the statement to a backend.
	actRun txActions = 1 << iota
	// actClose: close the backend (MariaDB rolls back what it held).
	actClose
	// actPool: the backend may leave the session (hold window, pool).
	actPool
	// actKeep: pin the backend to this session (no hold timer).
	actKeep
	// actReplyOK, actReplyAborted (1290/40001), actReplyLost (1927/08S01):
	// answer the client instead of running the statement.
	actReplyOK
	actReplyAborted
	actReplyLost
	// actClearNextTx: the transaction a one-shot SET TRANSACTION was for
	// has started; stop replaying it.
	actClearNextTx
	// actTxLost: an open transaction (or unreplayable state) went with
	// the backend; the session is now aborted.
	actTxLost
)

func (a txActions) has(b txActions) bool { return a&b != 0 }

// open: the client may believe a transaction is open.
func (t txState) open() bool { return t.inTx && !t.txOver }

// holds: the backend carries what must not leave it (a transaction,
// possibly over but not yet ended by the client, or unreplayable state).
func (t txState) holds() bool { return t.inTx || t.pinned }

// toMaster: every statement goes to the master (and stays on the
// session's connection there), whatever the routing mode says.
func (t txState) toMaster() bool { return t.inTx || t.pinned || t.autocommitOff }

// status is the server status the proxy reports for its own answers.
func (t txState) status() uint16 {
	var st uint16
	if t.inTx {
		st |= wire.StatusInTrans
	}
	if !t.autocommitOff {
		st |= wire.StatusAutocommit
	}
	return st
}

// lose is the state after the backend holding the transaction went away.
func (t txState) lose() txState {
	t.inTx, t.txOver, t.pinned = false, false, false
	return t
}

// Step is the transition function: the state after ev and what to do.
func (t txState) Step(ev txEvent) (txState, txActions) {
	switch ev.kind {
	case evStmt:
		if !t.aborted {
			return t, actRun
		}
		switch {
		case ev.stmt == classify.Rollback && ev.rollsBack:
			t.aborted = false
			return t, actReplyOK
		case ev.stmt == classify.Begin:
			t.aborted = false
			return t, actRun
		case ev.stmt == classify.Commit:
			t.aborted = false // the transaction is over; the COMMIT did not run
		}
		return t, actReplyAborted

	case evReply:
		var a txActions
		if ev.hasStatus {
			t.inTx = ev.status&wire.StatusInTrans != 0
			t.autocommitOff = ev.status&wire.StatusAutocommit == 0
			t.txOver = false
			if t.inTx {
				a = actClearNextTx
			}
		} else if ev.rolledBack && t.inTx {
			t.txOver = true
		}
		return t, a

	case evPins:
		t.pinned = true
		return t, 0

	case evReset:
		t.pinned = false
		return t, 0

	case evMoved:
		if !t.holds() {
			return t, actPool
		}
		// Never half-apply a transaction or unreplayable state on a new
		// route: whatever kind the backend was taken as, it carries them.
		if !t.open() {
			return t.lose(), actClose
		}
		t = t.lose()
		t.aborted = true
		return t, actClose | actTxLost | actReplyAborted

	case evLostBeforeSend:
		switch {
		case ev.stmt == classify.Rollback && ev.rollsBack:
			t.aborted = false
			return t, actReplyOK
		case ev.stmt == classify.Commit, ev.stmt == classify.Begin:
			t.aborted = false // the client's transaction is over: the statement failed, nothing is open
		}
		return t, actReplyAborted

	case evLostAfterSend:
		if !t.open() && !t.pinned {
			t.inTx, t.txOver = false, false
			return t, actClose | actReplyLost
		}
		t = t.lose()
		switch ev.effect {
		case classify.TxKeeps:
			t.aborted = true
			return t, actClose | actTxLost | actReplyAborted
		case classify.TxRollsBack:
			return t, actClose | actReplyOK
		}
		return t, actClose | actReplyLost

	case evBroken:
		if !t.open() && !t.pinned {
			t.inTx, t.txOver = false, false
			return t, actClose
		}
		t = t.lose()
		t.aborted = true
		return t, actClose | actTxLost

	case evIdleTxFired:
		t = t.lose()
		t.aborted = true
		return t, actTxLost

	case evRelease:
		if t.toMaster() {
			return t, actKeep
		}
		return t, actPool

	case evFinish:
		if t.inTx || t.pinned || t.aborted {
			return t, actClose // rolls back whatever the client left open
		}
		return t, actPool
	}
	panic("sqlproxy: unknown transaction event")
}

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

// oneShotTxSet reports whether sql is SET TRANSACTION without SESSION or
// GLOBAL: characteristics of the next transaction only (session.nextTx).
// Anything it does not recognise (a leading comment, say) stays session
// state, replayed as before.
func oneShotTxSet(sql []byte) bool {
	f := strings.Fields(string(sql[:min(len(sql), 32)]))
	return len(f) >= 2 && strings.EqualFold(f[0], "SET") && strings.EqualFold(f[1], "TRANSACTION")
}
