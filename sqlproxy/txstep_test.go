package sqlproxy

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"phxgo/sqlproxy/classify"
	"phxgo/sqlproxy/wire"
)

// parseTx reads a state written as comma-separated flags: tx, over,
// acoff, aborted, pinned ("" is the clean state).
func parseTx(t *testing.T, s string) txState {
	t.Helper()
	var st txState
	for _, f := range strings.Split(s, ",") {
		switch strings.TrimSpace(f) {
		case "":
		case "tx":
			st.inTx = true
		case "over":
			st.txOver = true
		case "acoff":
			st.autocommitOff = true
		case "aborted":
			st.aborted = true
		case "pinned":
			st.pinned = true
		default:
			t.Fatalf("unknown state flag %q", f)
		}
	}
	return st
}

func (t txState) String() string {
	var f []string
	for _, x := range []struct {
		on   bool
		name string
	}{{t.inTx, "tx"}, {t.txOver, "over"}, {t.autocommitOff, "acoff"}, {t.aborted, "aborted"}, {t.pinned, "pinned"}} {
		if x.on {
			f = append(f, x.name)
		}
	}
	return strings.Join(f, ",")
}

func (a txActions) String() string {
	names := []string{"run", "close", "pool", "keep", "ok", "aborted", "lost", "clear_next_tx", "tx_lost"}
	var f []string
	for i, n := range names {
		if a&(1<<i) != 0 {
			f = append(f, n)
		}
	}
	return strings.Join(f, "|")
}

const (
	stIdle   = wire.StatusAutocommit                      // autocommit, no transaction
	stTx     = wire.StatusAutocommit | wire.StatusInTrans // BEGIN ran
	stOffTx  = wire.StatusInTrans                         // autocommit=0, a statement ran
	stOffIdl = uint16(0)                                  // autocommit=0, nothing since COMMIT
)

// TestTxStep lists every transition of the session's transaction state
// machine (txstate.go) that the session can meet.
func TestTxStep(t *testing.T) {
	reply := func(st uint16) txEvent { return txEvent{kind: evReply, status: st, hasStatus: true} }
	errReply := txEvent{kind: evReply}
	deadlock := txEvent{kind: evReply, rolledBack: true}
	stmt := func(k classify.Kind) txEvent { return txEvent{kind: evStmt, stmt: k} }
	rollback := txEvent{kind: evStmt, stmt: classify.Rollback, rollsBack: true}
	rollbackTo := txEvent{kind: evStmt, stmt: classify.Rollback} // ROLLBACK TO SAVEPOINT, AND CHAIN
	before := func(k classify.Kind) txEvent { return txEvent{kind: evLostBeforeSend, stmt: k} }
	after := func(e classify.TxEffect) txEvent { return txEvent{kind: evLostAfterSend, effect: e} }
	ev := func(k txEventKind) txEvent { return txEvent{kind: k} }

	cases := []struct {
		from string
		ev   txEvent
		to   string
		do   txActions
	}{
		// A statement arrives: it runs unless the session is aborted.
		{"", stmt(classify.Write), "", actRun},
		{"tx", stmt(classify.Commit), "tx", actRun},
		{"aborted", stmt(classify.Write), "aborted", actReplyAborted},
		{"aborted", stmt(classify.Read), "aborted", actReplyAborted},
		{"aborted", stmt(classify.Other), "aborted", actReplyAborted},
		{"aborted", rollbackTo, "aborted", actReplyAborted},
		{"aborted", rollback, "", actReplyOK},
		{"aborted", stmt(classify.Begin), "", actRun},
		{"aborted", stmt(classify.Commit), "", actReplyAborted},
		{"aborted,acoff", rollback, "acoff", actReplyOK},

		// The backend's status flags are the authority on the transaction.
		{"", reply(stTx), "tx", actClearNextTx},
		{"", reply(stIdle), "", 0},
		{"tx", reply(stIdle), "", 0},
		{"tx,over", reply(stIdle), "", 0},
		{"tx,over", reply(stTx), "tx", actClearNextTx},
		{"", reply(stOffIdl), "acoff", 0},
		{"acoff", reply(stOffTx), "tx,acoff", actClearNextTx},
		{"tx,acoff", reply(stIdle), "", 0},
		{"pinned", reply(stTx), "tx,pinned", actClearNextTx},
		{"tx,pinned", reply(stIdle), "pinned", 0},
		// An ERR carries no status: only 40001 says the transaction ended.
		{"tx", errReply, "tx", 0},
		{"", errReply, "", 0},
		{"tx", deadlock, "tx,over", 0},
		{"", deadlock, "", 0},

		// Unreplayable state pins the session until COM_RESET_CONNECTION.
		{"", ev(evPins), "pinned", 0},
		{"tx", ev(evPins), "tx,pinned", 0},
		{"pinned", ev(evReset), "", 0},
		{"tx,pinned", ev(evReset), "tx", 0},

		// The route moved away from the held backend.
		{"", ev(evMoved), "", actPool},
		{"acoff", ev(evMoved), "acoff", actPool},
		{"tx", ev(evMoved), "aborted", actClose | actTxLost | actReplyAborted},
		{"tx,acoff", ev(evMoved), "acoff,aborted", actClose | actTxLost | actReplyAborted},
		{"tx,pinned", ev(evMoved), "aborted", actClose | actTxLost | actReplyAborted},
		{"tx,over", ev(evMoved), "", actClose},
		{"pinned", ev(evMoved), "", actClose},
		// … and the statement that met it was not sent.
		{"aborted", before(classify.Write), "aborted", actReplyAborted},
		{"aborted", before(classify.Read), "aborted", actReplyAborted},
		{"aborted", txEvent{kind: evLostBeforeSend, stmt: classify.Rollback, rollsBack: true}, "", actReplyOK},
		{"aborted", txEvent{kind: evLostBeforeSend, stmt: classify.Rollback}, "aborted", actReplyAborted},
		{"aborted", before(classify.Commit), "", actReplyAborted},
		{"aborted", before(classify.Begin), "", actReplyAborted},

		// The backend broke after the command was sent, nothing relayed.
		{"", after(classify.TxKeeps), "", actClose | actReplyLost},
		{"", after(classify.TxMayCommit), "", actClose | actReplyLost},
		{"tx,over", after(classify.TxKeeps), "", actClose | actReplyLost},
		{"tx", after(classify.TxKeeps), "aborted", actClose | actTxLost | actReplyAborted},
		{"tx", after(classify.TxRollsBack), "", actClose | actReplyOK},
		{"tx", after(classify.TxMayCommit), "", actClose | actReplyLost},
		{"tx,acoff", after(classify.TxMayCommit), "acoff", actClose | actReplyLost},
		{"pinned", after(classify.TxKeeps), "aborted", actClose | actTxLost | actReplyAborted},
		{"pinned", after(classify.TxRollsBack), "", actClose | actReplyOK},
		{"pinned", after(classify.TxMayCommit), "", actClose | actReplyLost},

		// The backend broke outside a relayed command.
		{"", ev(evBroken), "", actClose},
		{"acoff", ev(evBroken), "acoff", actClose},
		{"tx,over", ev(evBroken), "", actClose},
		{"tx", ev(evBroken), "aborted", actClose | actTxLost},
		{"pinned", ev(evBroken), "aborted", actClose | actTxLost},

		// The idle-in-transaction timer closed the backend.
		{"tx", ev(evIdleTxFired), "aborted", actTxLost},
		{"tx,pinned,acoff", ev(evIdleTxFired), "acoff,aborted", actTxLost},

		// A command finished: its backend stays with the session while
		// anything lives on it (and autocommit off keeps the master).
		{"", ev(evRelease), "", actPool},
		{"aborted", ev(evRelease), "aborted", actPool},
		{"tx", ev(evRelease), "tx", actKeep},
		{"tx,over", ev(evRelease), "tx,over", actKeep},
		{"acoff", ev(evRelease), "acoff", actKeep},
		{"pinned", ev(evRelease), "pinned", actKeep},

		// The client left.
		{"", ev(evFinish), "", actPool},
		{"acoff", ev(evFinish), "acoff", actPool},
		{"tx", ev(evFinish), "tx", actClose},
		{"pinned", ev(evFinish), "pinned", actClose},
		{"aborted", ev(evFinish), "aborted", actClose},
	}
	seen := map[txEventKind]bool{}
	for _, c := range cases {
		from, want := parseTx(t, c.from), parseTx(t, c.to)
		got, do := from.Step(c.ev)
		if got != want || do != c.do {
			t.Errorf("%q --%s(%+v)--> %q %s, want %q %s", c.from, c.ev.kind, c.ev, got, do, c.to, c.do)
		}
		seen[c.ev.kind] = true
	}
	for k := range numTxEvents {
		if !seen[k] {
			t.Errorf("no transition listed for event %s", k)
		}
	}
}

// TestTxQueries: what the state says about routing and the status the
// proxy reports.
func TestTxQueries(t *testing.T) {
	for _, c := range []struct {
		st             string
		open, toMaster bool
		status         uint16
	}{
		{"", false, false, wire.StatusAutocommit},
		{"tx", true, true, wire.StatusAutocommit | wire.StatusInTrans},
		{"tx,over", false, true, wire.StatusAutocommit | wire.StatusInTrans},
		{"acoff", false, true, 0},
		{"pinned", false, true, wire.StatusAutocommit},
		{"aborted", false, false, wire.StatusAutocommit},
	} {
		st := parseTx(t, c.st)
		if st.open() != c.open || st.toMaster() != c.toMaster || st.status() != c.status {
			t.Errorf("%q: open %v toMaster %v status %#x, want %v %v %#x", c.st,
				st.open(), st.toMaster(), st.status(), c.open, c.toMaster, c.status)
		}
	}
}

// TestReplicaOK: the routing rule under every state and hint.
func TestReplicaOK(t *testing.T) {
	read := classify.Classify("SELECT 1")
	for _, c := range []struct {
		st             string
		onlyMaster     bool
		masterPref     bool
		sql            string
		ok, wantHinted bool
	}{
		{"", false, false, "SELECT 1", true, false},
		{"", false, true, "SELECT 1", false, false},
		{"", true, false, "SELECT 1", false, false},
		{"tx", false, false, "SELECT 1", false, false},
		{"acoff", false, false, "SELECT 1", false, false},
		{"pinned", false, false, "SELECT 1", false, false},
		{"", false, false, "SELECT 1 FOR UPDATE", false, false},
		{"", false, false, "INSERT INTO t VALUES (1)", false, false},
		{"", false, false, "/*#mode=readwrite*/ SELECT 1", false, true},
		{"", false, true, "/*#mode=readonly*/ SELECT 1", true, true},
		{"", false, false, "/*#mode=readonly*/ DELETE FROM t", false, true},
		{"tx", false, false, "/*#mode=readonly*/ SELECT 1", false, false},
	} {
		info := classify.Classify(c.sql)
		ok, hinted := replicaOK(parseTx(t, c.st), c.onlyMaster, c.masterPref, info)
		if ok != c.ok || hinted != c.wantHinted {
			t.Errorf("%q in %q: ok %v hinted %v, want %v %v", c.sql, c.st, ok, hinted, c.ok, c.wantHinted)
		}
	}
	_ = read
}

// simConn is a model MariaDB connection.
type simConn struct {
	id     int
	addr   string
	inTx   bool // a transaction is open on it
	acOff  bool
	closed bool
}

// txSim drives txState the way the session does, against model MariaDB
// connections at two addresses (the master and the replica, which trade
// places on a failover) and a model client, and checks the invariants.
type txSim struct {
	t      *testing.T
	rnd    *rand.Rand
	st     txState
	master string
	held   *simConn
	armed  bool // held under the hold window (actPool): may go to the pool
	pool   []*simConn
	nextID int
	// clientTx: the connection the client's transaction runs on, as far
	// as the client was told (nil: the client believes none is open).
	clientTx *simConn
	log      []simStep // the latest steps, shown when an invariant fails
}

// simStep is one step of the simulation (note: a failover, say, when set).
type simStep struct {
	ev            txEvent
	before, after txState
	do            txActions
	note          string
}

func (m *txSim) note(s string) { m.record(simStep{note: s}) }

func (m *txSim) record(st simStep) {
	if len(m.log) == 40 {
		copy(m.log, m.log[1:])
		m.log = m.log[:39]
	}
	m.log = append(m.log, st)
}

func (m *txSim) fail(format string, args ...any) {
	m.t.Helper()
	var lines []string
	for _, st := range m.log {
		if st.note != "" {
			lines = append(lines, st.note)
			continue
		}
		lines = append(lines, fmt.Sprintf("%-18s %q -> %q %s", st.ev.kind, st.before, st.after, st.do))
	}
	m.t.Fatalf("%s\nafter:\n  %s", fmt.Sprintf(format, args...), strings.Join(lines, "\n  "))
}

func (m *txSim) step(ev txEvent) txActions {
	before := m.st
	var a txActions
	m.st, a = m.st.Step(ev)
	m.record(simStep{ev: ev, before: before, after: m.st, do: a})
	// The transaction pin ends only when a server said not-in-transaction
	// or the connection holding the transaction is gone.
	if before.inTx && !m.st.inTx {
		saidNot := ev.kind == evReply && ev.hasStatus && ev.status&wire.StatusInTrans == 0
		if !saidNot && !a.has(actClose) && ev.kind != evIdleTxFired {
			m.fail("transaction pin released on %s without the server saying so", ev.kind)
		}
	}
	if m.st.aborted && m.st.inTx {
		m.fail("aborted inside a transaction")
	}
	return a
}

// leave gives c up to the pool: nothing may live on it.
func (m *txSim) leave(c *simConn) {
	if c.inTx {
		m.fail("connection %d left the session with its transaction open", c.id)
	}
	m.pool = append(m.pool, c)
}

func (m *txSim) closeConn(c *simConn) { c.closed, c.inTx = true, false }

// takeHeld is acquire's first half: the held connection if it is at addr.
func (m *txSim) takeHeld(addr string) (c *simConn, lost bool) {
	c, m.held, m.armed = m.held, nil, false
	if c == nil || c.addr == addr {
		return c, false
	}
	a := m.step(txEvent{kind: evMoved})
	if a.has(actClose) {
		m.closeConn(c)
	} else {
		m.leave(c)
	}
	return nil, a.has(actTxLost)
}

func (m *txSim) connect(addr string) *simConn {
	for i, c := range m.pool {
		if c.addr == addr {
			m.pool = append(m.pool[:i], m.pool[i+1:]...)
			if c.inTx {
				m.fail("pooled connection %d has an open transaction", c.id)
			}
			c.acOff = false // COM_RESET_CONNECTION for the next session
			return c
		}
	}
	m.nextID++
	return &simConn{id: m.nextID, addr: addr}
}

func (m *txSim) replica() string {
	if m.master == "A" {
		return "B"
	}
	return "A"
}

// clientGot updates what the client believes after an answer on c
// (c nil: the proxy answered itself).
func (m *txSim) clientGot(kind classify.Kind, c *simConn, errState string, status uint16, hasStatus bool) {
	switch {
	case errState == "40001" || errState == "lost":
		m.clientTx = nil // told: rolled back, or outcome unknown
	case kind == classify.Commit || kind == classify.Rollback:
		m.clientTx = nil
	case hasStatus && status&wire.StatusInTrans != 0 && c != nil:
		if m.clientTx == nil {
			m.clientTx = c
		}
	case hasStatus && status&wire.StatusInTrans == 0:
		m.clientTx = nil
	}
}

var simStmts = []string{
	"BEGIN", "START TRANSACTION READ ONLY", "COMMIT", "ROLLBACK", "ROLLBACK TO SAVEPOINT s",
	"INSERT INTO t VALUES (1)", "SELECT 1", "SELECT 1 FOR UPDATE", "/*#mode=readonly*/ SELECT 1",
	"SET autocommit=0", "SET autocommit=1", "SET TRANSACTION ISOLATION LEVEL SERIALIZABLE",
	"CREATE TABLE u (id INT)", "LOCK TABLES t WRITE", "SAVEPOINT s",
}

// statement runs one client statement through the model session.
func (m *txSim) statement(sql string) {
	info := classify.Classify(sql)
	if m.st.aborted {
		if a := m.step(stmtEvent(evStmt, info.Kind, []byte(sql))); !a.has(actRun) {
			m.clientGot(info.Kind, nil, replyState(a), 0, false)
			return
		}
	}
	addr := m.master
	if ok, _ := replicaOK(m.st, false, false, info); ok {
		addr = m.replica()
		if info.Kind != classify.Read {
			m.fail("%q routed to a replica", sql)
		}
		if m.clientTx != nil {
			m.fail("%q routed to a replica inside the client's transaction", sql)
		}
	}
	c, lost := m.takeHeld(addr)
	if lost {
		a := m.step(stmtEvent(evLostBeforeSend, info.Kind, []byte(sql)))
		m.clientGot(info.Kind, nil, replyState(a), 0, false)
		return
	}
	if c == nil {
		c = m.connect(addr)
	}
	if m.clientTx != nil && m.clientTx != c {
		m.fail("%q of the transaction on connection %d sent on connection %d", sql, m.clientTx.id, c.id)
	}
	if m.rnd.IntN(12) == 0 { // the connection breaks after the send
		m.closeConn(c)
		a := m.step(txEvent{kind: evLostAfterSend, effect: txEffect(wire.ComQuery, []byte(sql))})
		m.clientGot(info.Kind, nil, replyState(a), 0, false)
		return
	}
	status, hasStatus, errState := m.serverRuns(c, sql, info)
	m.step(txEvent{kind: evReply, status: status, hasStatus: hasStatus, rolledBack: errState == "40001"})
	if hasStatus && (m.st.inTx != c.inTx || m.st.autocommitOff != c.acOff) {
		m.fail("state %q disagrees with the server (in transaction %v, autocommit off %v)", m.st, c.inTx, c.acOff)
	}
	if errState == "" && info.Pins {
		m.step(txEvent{kind: evPins})
	}
	m.clientGot(info.Kind, c, errState, status, hasStatus)
	if m.step(txEvent{kind: evRelease}).has(actKeep) {
		m.held, m.armed = c, false
	} else {
		if c.inTx {
			m.fail("connection %d released to the hold window with its transaction open", c.id)
		}
		m.held, m.armed = c, true
	}
}

func replyState(a txActions) string {
	switch {
	case a.has(actReplyAborted):
		return "40001"
	case a.has(actReplyLost):
		return "lost"
	}
	return ""
}

// serverRuns is MariaDB's side of a statement on c: the status flags of
// its answer, or an ERR (a deadlock rolls the transaction back: 40001).
func (m *txSim) serverRuns(c *simConn, sql string, info classify.Info) (uint16, bool, string) {
	implicitCommit := strings.HasPrefix(sql, "CREATE") || strings.HasPrefix(sql, "LOCK")
	switch {
	case info.Kind == classify.Begin || implicitCommit:
		c.inTx = info.Kind == classify.Begin
	case info.Kind == classify.Commit || info.Kind == classify.Rollback && !strings.Contains(sql, " TO "):
		c.inTx = false
	case info.Autocommit == -1:
		c.acOff = true
	case info.Autocommit == 1:
		c.acOff, c.inTx = false, false
	case info.Kind == classify.Write && c.inTx && m.rnd.IntN(8) == 0:
		c.inTx = false
		return 0, false, "40001" // deadlock
	case info.Kind == classify.Read || info.Kind == classify.Write:
		if c.acOff {
			c.inTx = true
		}
	}
	st := uint16(0)
	if c.inTx {
		st |= wire.StatusInTrans
	}
	if !c.acOff {
		st |= wire.StatusAutocommit
	}
	return st, true, ""
}

// TestTxStepProperties steps random event sequences (statements,
// failovers, hold expiries, broken connections, idle timeouts, client
// exits) through the machine and checks: a transaction never spans two
// backend connections, a connection with an open transaction never
// leaves the session, a write never goes to a replica, and the pin ends
// only when the server says not-in-transaction (txSim.step).
func TestTxStepProperties(t *testing.T) {
	for seed := range uint64(300) {
		m := &txSim{t: t, rnd: rand.New(rand.NewPCG(seed, 22)), master: "A"}
		for range 200 {
			switch r := m.rnd.IntN(20); {
			case r < 14:
				m.statement(simStmts[m.rnd.IntN(len(simStmts))])
			case r == 14: // failover: the replica is the master now
				m.master = m.replica()
				m.note("failover to " + m.master)
			case r == 15: // the hold window ends
				if m.held != nil && m.armed {
					m.leave(m.held)
					m.held, m.armed = nil, false
				}
			case r == 16: // broken outside a statement (causal: noteWrite)
				if m.held != nil {
					c := m.held
					m.held = nil
					if m.step(txEvent{kind: evBroken}).has(actTxLost) {
						m.clientTx = nil // the next statement is told (aborted)
					}
					m.closeConn(c)
				}
			case r == 17: // a hop's idle-in-transaction timer
				if m.st.open() && m.held != nil {
					m.closeConn(m.held)
					m.held = nil
					m.step(txEvent{kind: evIdleTxFired})
					m.clientTx = nil
				}
			case r == 18: // the client leaves; another takes its place
				if m.held != nil {
					if m.step(txEvent{kind: evFinish}).has(actClose) {
						m.closeConn(m.held)
					} else {
						m.leave(m.held)
					}
				}
				m.held, m.armed, m.st, m.clientTx = nil, false, txState{}, nil
			default: // COM_RESET_CONNECTION on the held connection
				if m.held != nil {
					m.held.inTx, m.held.acOff = false, false
					m.step(txEvent{kind: evReply, status: wire.StatusAutocommit, hasStatus: true})
					m.step(txEvent{kind: evReset})
					m.clientTx = nil
				}
			}
		}
	}
}
