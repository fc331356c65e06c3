package sqlproxy

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"
	"unsafe"

	"phxgo/sqlproxy/auth"
	"phxgo/sqlproxy/classify"
	"phxgo/sqlproxy/wire"
)

// maxSets bounds the replay log of SET statements; past it the session
// pins its connection instead.
const maxSets = 64

// session is one client connection. Only its own goroutine touches its
// fields, except held/holdTimer which the hold timer also reads (mu).
type session struct {
	srv  *Server
	mode Mode
	cl   *wire.Conn
	id   uint32

	user    string
	stage1  string
	caps    uint32
	charset uint8
	hop     bool        // opened by another proxy: never forward again
	client  auth.Client // the real client's address (a verified hop's report)
	using   *backend    // the backend of the command under way (guard.go: abandon)
	// socketOK: MariaDB would judge a login by its unix socket
	// (user@localhost) as the account the client matched, so
	// Config.MySQLSocket may be used for this session.
	socketOK bool
	// acctHost, byAddr: the Host of the client's row, and whether it
	// matches the client's address itself (auth.Account.ByAddr;
	// proxyproto.go).
	acctHost string
	byAddr   bool

	// Session state replayed on a new backend connection.
	db   string
	sets [][]byte
	// nextTx: a SET TRANSACTION without SESSION or GLOBAL, which MariaDB
	// applies to the next transaction only. Replayed (after sets) until a
	// transaction starts; never kept with sets, which would replay it on
	// every later connection and pin the session after maxSets of them.
	nextTx   []byte
	stateGen uint64
	// optionSet: the client ran COM_SET_OPTION; its connection keeps
	// the option through resets, so it is never pooled (track).
	optionSet bool
	stmts     map[uint32]*pstmt
	stmtBytes int // of stmts' texts (stmtbudget.go)
	nextStmt  uint32
	closes    uint64 // statements the client closed (stmt.go: closeStale)
	execBuf   []byte // an execute packet with parameter types put back
	// sqlMode: NO_BACKSLASH_ESCAPES as the last answer's status said,
	// which decides how statements are lexed (classify.ClassifyIn).
	sqlMode classify.SQLMode
	// multibyte: character_set_client may be big5, cp932, gbk or sjis,
	// whose characters can hide a backslash (classify.Lexing.Multibyte):
	// the handshake asked for one, or a statement may have set one. A
	// SET to a named safe set that succeeded clears it.
	multibyte bool

	// Transaction and routing state (txstate.go): changed only by step.
	txState

	// Causal mode (causal.go): the newest write position, the replicas
	// known to have applied it, and whether a write's position is
	// unknown (its GTID could not be read: reads go to the master).
	written       gtidPos
	causalOK      map[string]struct{}
	causalUnknown bool

	mu           sync.Mutex
	held         *backend
	armed        bool      // held is on the hold timer (else kept)
	holdUntil    time.Time // when the armed hold ends
	holdTimer    *time.Timer
	timerPending bool // holdTimer will fire (it re-arms itself while holdUntil moves on)

	// Idle-in-transaction bound (idletx.go).
	idleTxTimer *time.Timer
	idleTxArmed bool // the timer may take held
	idleTxFired bool // it did: the transaction is gone
}

func (s *session) serve() error {
	for {
		s.cl.Seq = 0
		s.idleTxArm()
		pkt, err := s.cl.ReadPacketReuse() // valid until the next read: command copies what it keeps
		s.idleTxDisarm()
		if errors.Is(err, wire.ErrTooBig) {
			s.srv.metrics.errors.WithLabelValues("too_big").Inc()
			_ = s.cl.WriteFlush(wire.TooBig.Packet())
			drainClose(s.cl)
			return err
		}
		if err != nil {
			return err
		}
		if len(pkt) == 0 {
			return wire.ErrShort // malformed: close this client only
		}
		if k := s.srv.cfg.Knobs; k != nil && k.OnCommand != nil {
			k.OnCommand(pkt)
		}
		err = s.command(pkt)
		s.using = nil
		if err != nil {
			return err
		}
	}
}

// command handles one client command; an error closes the client.
func (s *session) command(pkt []byte) error {
	cmd := pkt[0]
	switch cmd {
	case wire.ComQuit:
		return errQuit
	case wire.ComPing:
		return s.cl.WriteFlush(wire.OK(0, 0, s.status()))
	case wire.ComChangeUser:
		return s.reply(errUnsupported)
	case wire.ComQuery:
		// pkt is reused by the next read: classify it in place and keep
		// only a copy of what outlives the command (a USE's database).
		info := classify.ClassifyIn(unsafe.String(unsafe.SliceData(pkt[1:]), len(pkt)-1), s.lexing())
		info.DB = strings.Clone(info.DB)
		if info.Kills {
			return s.refuseKill() // kill.go
		}
		if info.Dynamic && s.srv.cfg.RefuseDynamicSQL {
			return s.refuseDynamic() // dynamic.go
		}
		if info.Charset == classify.CharsetPairs {
			s.multibyte = true // before it runs: it may fail half done
		}
		return s.query(pkt, info)
	case wire.ComInitDB:
		return s.query(pkt, classify.Info{Kind: classify.Use, DB: string(pkt[1:])})
	case wire.ComStmtPrepare:
		return s.prepare(pkt)
	case wire.ComStmtExecute, wire.ComStmtFetch, wire.ComStmtReset, wire.ComStmtSendLong, wire.ComStmtClose:
		return s.stmtCommand(pkt)
	case wire.ComProcessKill:
		return s.refuseKill() // kill.go
	case wire.ComResetConnection:
		// MariaDB goes back to the handshake's character set: a session
		// that logged in as gbk and then SET NAMES utf8mb4 is gbk again
		// (red-team test, session 38).
		// Raised now, lowered only once the reset succeeded (query).
		reset := classify.Info{Kind: classify.Other, Charset: classify.CharsetSingle}
		if classify.PairCollations[s.charset] {
			s.multibyte, reset.Charset = true, classify.CharsetPairs
		}
		return s.query(pkt, reset) // on the master connection
	case wire.ComFieldList, wire.ComStatistics, wire.ComSetOption:
		return s.query(pkt, classify.Info{Kind: classify.Other}) // on the master connection
	}
	// Any other command is refused, not relayed: the relay knows the
	// shape of the answers above, and an answer it did not read whole
	// stays on the connection for whoever takes it from the pool next.
	// COM_PROCESS_INFO (a result set) relayed as one frame let a client
	// put its own result set into another client's next query (red-team
	// test, session 37). MariaDB refuses most of the rest anyway
	// (replication, shutdown, debug) or answers "Unknown command".
	return s.reply(errUnknownCommand)
}

// lexing is how MariaDB may lex this session's next statement.
func (s *session) lexing() classify.Lexing {
	return classify.Lexing{Mode: s.sqlMode, Multibyte: s.multibyte}
}

// step feeds ev to the transaction state machine (txstate.go) and
// returns the actions the caller must carry out.
func (s *session) step(ev txEvent) txActions {
	var a txActions
	s.txState, a = s.txState.Step(ev)
	return a
}

// replyFor answers the client as a says (actReplyOK, actReplyAborted,
// actReplyLost).
func (s *session) replyFor(a txActions) error {
	switch {
	case a.has(actReplyOK):
		return s.replyOK()
	case a.has(actReplyAborted):
		return s.reply(errTxAborted)
	case a.has(actReplyLost):
		return s.reply(errLost)
	}
	return nil
}

func (s *session) replyOK() error {
	s.cl.Seq = 1
	return s.cl.WriteFlush(wire.OK(0, 0, s.status()))
}

func (s *session) reply(e *wire.Error) error {
	s.srv.metrics.errors.WithLabelValues(errLabel(e)).Inc()
	s.cl.Seq = 1
	return s.cl.WriteFlush(e.Packet())
}

// query routes and runs a COM_QUERY (or a command treated like one).
func (s *session) query(pkt []byte, info classify.Info) error {
	if s.aborted {
		if a := s.step(stmtEvent(evStmt, info.Kind, pkt[1:])); !a.has(actRun) {
			return s.replyFor(a)
		}
	}
	start := time.Now()
	b, kind, werr := s.acquire(s.route(info))
	if werr == errTxAborted {
		return s.replyFor(s.step(stmtEvent(evLostBeforeSend, info.Kind, pkt[1:])))
	}
	if werr != nil {
		return s.reply(werr)
	}
	res, dropped, err := s.roundTrip(b, pkt, pkt[1:], func() (wire.Result, error) {
		return wire.RelayResponse(b.c, s.cl, pkt[0], s.caps)
	})
	if err != nil || dropped {
		return err
	}
	s.srv.metrics.observe(kind, start, res.Err)
	if res.Err == nil {
		if info.Charset == classify.CharsetSingle {
			s.multibyte = false
		}
		s.track(b, pkt, info)
		if mayWrite(info) && !s.afterWrite(b, kind) {
			return nil
		}
	}
	s.release(b)
	return nil
}

// afterWrite records the write position in causal mode. false: b broke
// and was closed (the write itself succeeded; reads go to the master
// until a later write's position is known).
func (s *session) afterWrite(b *backend, kind routeKind) bool {
	if s.mode != Causal || kind == routeReplica || s.inTx {
		return true
	}
	recorded, err := s.noteWrite(b, kind)
	if err != nil {
		s.causalUnknown = true
		s.dropBroken(b)
		return false
	}
	s.causalUnknown = !recorded
	return true
}

// roundTrip sends pkt on b and relays the answer. A backend failure
// before any byte reached the client becomes an error reply (lostBackend:
// sql, the statement text, decides whether an open transaction is
// reported rolled back or its outcome unknown) and the backend is
// dropped; a failure after that closes the client. dropped: b was closed
// and the client answered; the caller must not touch b again.
func (s *session) roundTrip(b *backend, pkt, sql []byte, relay func() (wire.Result, error)) (res wire.Result, dropped bool, err error) {
	b.c.Seq = 0
	err = b.c.WriteRequest(pkt) // the answer is read next (no read that finds nothing first)
	if err == nil {
		res, err = relay()
	}
	if err != nil {
		b.close()
		s.dropHeld(b)
		if res.Relayed > 0 || errors.Is(err, wire.ErrClientSide) {
			return res, true, err
		}
		return res, true, s.replyFor(s.step(txEvent{kind: evLostAfterSend, effect: txEffect(pkt[0], sql)}))
	}
	// A deadlock (1213) or a proxy's "rolled back" (SQLSTATE 40001)
	// ended the transaction; ERR packets carry no status to say so.
	ev := txEvent{kind: evReply, status: res.Status, hasStatus: res.HasStatus,
		rolledBack: res.Err != nil && res.Err.SQLState == "40001"}
	if res.HasStatus {
		s.sqlMode = classify.ModeOfStatus(res.Status&wire.StatusNoBackslashEsc != 0)
	}
	if s.step(ev).has(actClearNextTx) {
		s.nextTx = nil
	}
	return res, false, nil
}

// dropBroken closes b, which broke outside a relayed statement (no
// answer owed to the client for it). An open transaction or unreplayable
// state went with it: the session enters the aborted state. lostTx
// reports that it did.
func (s *session) dropBroken(b *backend) (lostTx bool) {
	a := s.step(txEvent{kind: evBroken})
	b.close()
	s.dropHeld(b)
	return a.has(actTxLost)
}

// track records replayable session state after a successful statement.
func (s *session) track(b *backend, pkt []byte, info classify.Info) {
	if info.Pins {
		s.step(txEvent{kind: evPins})
	}
	switch info.Kind {
	case classify.Use:
		s.db, b.db = info.DB, info.DB
		s.stateGen++
		b.gen = s.stateGen
	case classify.Set:
		if oneShotTxSet(pkt[1:]) {
			s.nextTx = append(s.nextTx[:0], pkt...)
			s.stateGen++
			b.gen = s.stateGen
			return
		}
		if len(s.sets) >= maxSets {
			s.step(txEvent{kind: evPins})
			return
		}
		s.sets = append(s.sets, append([]byte(nil), pkt...))
		s.stateGen++
		b.gen = s.stateGen
	}
	if pkt[0] == wire.ComSetOption {
		// Multi-statements on or off for this connection only: no reset
		// undoes it (COM_RESET_CONNECTION keeps it) and the pool matches
		// connections by the capabilities their clients logged in with.
		// So the session keeps this connection, and it is closed, never
		// pooled, when the client leaves (red-team test, session 37: a
		// pooled connection gave the next client multi-statements).
		s.optionSet = true
		s.step(txEvent{kind: evPins})
	}
	if pkt[0] == wire.ComResetConnection {
		s.sets, s.nextTx = nil, nil
		s.step(txEvent{kind: evReset})
		if s.optionSet {
			s.step(txEvent{kind: evPins}) // the reset left the option set
		}
		s.forgetStmts()
		clear(b.stmts)
		s.stateGen++
		b.gen = s.stateGen
	}
}

// finish returns or closes the session's backend when the client leaves.
func (s *session) finish() {
	s.mu.Lock()
	b := s.held
	s.held, s.armed = nil, false
	if s.holdTimer != nil {
		s.holdTimer.Stop()
		s.timerPending = false
	}
	if s.idleTxTimer != nil {
		s.idleTxTimer.Stop()
		s.idleTxArmed = false
	}
	s.mu.Unlock()
	if b == nil {
		return
	}
	if s.step(txEvent{kind: evFinish}).has(actClose) {
		b.close() // rolls back whatever the client left open
		return
	}
	s.srv.pool.put(b)
}

func (s *session) ctx() context.Context { return s.srv.ctx }
