package sqlproxy

import (
	"bytes"
	"encoding/binary"
	"time"

	"phxgo/sqlproxy/classify"
	"phxgo/sqlproxy/topology"
	"phxgo/sqlproxy/wire"
)

// Prepared statements. The client sees proxy-assigned ids that survive a
// change of backend connection (hold window over, master change, a
// rw-split read on another replica, a pooled connection reset for another
// session). A statement is prepared lazily on each backend connection
// where it first runs, so whatever the server kept per statement must be
// put back by the proxy:
//
//   - parameter types: a client sends them once (new_params_bound_flag 1)
//     and then omits them; an execute without types on a backend statement
//     that never got them (or got older ones) is rewritten to carry the
//     client's latest types (wire.ExecWithTypes), else MariaDB answers 1210;
//   - long data (COM_STMT_SEND_LONG_DATA) lives on one backend statement
//     until its execute or COM_STMT_RESET: those follow it to that
//     connection, and if it is gone (master change) the execute fails with
//     errLongDataLost rather than run with missing parameters;
//   - cursors: COM_STMT_FETCH and COM_STMT_RESET follow the statement to
//     the held connection that has it.
//
// COM_STMT_CLOSE closes the statement on the held connection; copies on
// this session's pooled connections are closed when the session takes
// that connection again (closeStale), and a connection handed to another
// session is reset, which drops them all.

// pstmt is a prepared statement as the client knows it.
type pstmt struct {
	sql      []byte
	readOnly bool // may execute on a replica
	params   int  // parameter count, from the prepare answer

	// types are the parameter types of the client's latest execute that
	// carried them (2 bytes per parameter); typesGen counts their changes
	// (0: none yet).
	types    []byte
	typesGen uint32

	// longOn is the backend holding long data for the next execute;
	// longLost: some of that long data did not reach it (a broken or
	// changed connection), so the execute must fail.
	longOn   *backend
	longLost bool
}

// bstmt is a statement prepared on one backend connection.
type bstmt struct {
	id       uint32 // the backend's statement id
	typesGen uint32 // pstmt.typesGen the backend last got (0: unknown)
}

// lastPrepared is the statement id MariaDB reads as "the statement this
// connection prepared last" (Connector/C's mariadb_stmt_execute_direct
// pipelines a prepare and an execute with it).
const lastPrepared = 0xffffffff

// errLongDataLost: long data was sent on a backend connection the session
// lost before the execute (master change, broken connection).
var errLongDataLost = &wire.Error{Code: 1290, SQLState: "HY000",
	Message: "phxgo: long data of this statement was lost with its backend connection; send it again"}

func (s *session) prepare(pkt []byte) error {
	// The id is taken first, whatever the answer: an execute pipelined
	// behind a refused prepare names it by lastPrepared, and must find
	// no statement (errUnknownStmt), never the one prepared before.
	s.nextStmt++
	id := s.nextStmt
	if s.aborted {
		return s.replyFor(s.step(txEvent{kind: evStmt, stmt: classify.Other}))
	}
	info := classify.ClassifyIn(string(pkt[1:]), s.lexing())
	if info.Kills {
		return s.refuseKill() // kill.go
	}
	if info.Dynamic && s.srv.cfg.RefuseDynamicSQL {
		return s.refuseDynamic() // dynamic.go
	}
	if info.Charset != classify.CharsetKeeps {
		s.multibyte = true // it runs at each execute; only a text SET clears this
	}
	if e := s.stmtRoom(len(pkt) - 1); e != nil {
		return s.reply(e) // stmtbudget.go
	}
	st := &pstmt{sql: append([]byte(nil), pkt[1:]...), readOnly: info.IsReadOnlyCandidate()}
	// Prepare where it will execute now; executions elsewhere re-prepare.
	b, kind, werr := s.acquire(s.route(classify.Info{Kind: classify.Other}))
	if werr != nil {
		return s.reply(werr)
	}
	start := time.Now()
	res, dropped, err := s.roundTrip(b, pkt, nil, func() (wire.Result, error) {
		return wire.RelayPrepare(b.c, s.cl, s.caps, id)
	})
	if err != nil || dropped {
		return err
	}
	s.srv.metrics.observe(kind, start, res.Err)
	if res.Err == nil {
		st.params = int(res.Params)
		s.keepStmt(id, st)
		b.stmts[id] = bstmt{id: res.StmtID}
	}
	s.release(b)
	return nil
}

// stmtRoute picks where a statement command runs. Execute goes where the
// statement's kind says, unless long data waits on the held connection;
// SEND_LONG_DATA, FETCH and RESET stay on the held connection when it has
// the statement (its long data, its cursor).
func (s *session) stmtRoute(cmd byte, id uint32, st *pstmt) decision {
	if cmd == wire.ComStmtExecute && st.longOn == nil {
		if st.readOnly {
			return s.route(classify.Info{Kind: classify.Read})
		}
		return s.route(classify.Info{Kind: classify.Other})
	}
	// Under mu while held: the hold timer may hand held to the pool
	// (and so to another session) only after taking it from s.held.
	s.mu.Lock()
	b := s.held
	onReplica := false
	if b != nil {
		_, has := b.stmts[id]
		onReplica = has && b.kind == routeReplica
	}
	s.mu.Unlock()
	if onReplica {
		return decision{replica: topology.Replica{MySQLAddr: b.key.addr}}
	}
	return s.route(classify.Info{Kind: classify.Other})
}

func (s *session) stmtCommand(pkt []byte) error {
	cmd := pkt[0]
	if len(pkt) < 5 {
		return wire.ErrShort
	}
	id := binary.LittleEndian.Uint32(pkt[1:])
	if id == lastPrepared {
		id = s.nextStmt
	}
	st := s.stmts[id]
	noReply := cmd == wire.ComStmtClose || cmd == wire.ComStmtSendLong
	if st == nil {
		if noReply {
			return nil
		}
		return s.reply(errUnknownStmt)
	}
	if cmd == wire.ComStmtClose {
		s.closeStmt(id)
		return nil
	}
	if s.aborted {
		a := s.step(txEvent{kind: evStmt, stmt: classify.Other}) // never runs
		if noReply {
			st.longLost = true
			return nil
		}
		return s.replyFor(a)
	}
	start := time.Now()
	b, kind, werr := s.acquire(s.stmtRoute(cmd, id, st))
	if werr != nil {
		if noReply {
			st.longLost = true
			return nil
		}
		return s.reply(werr)
	}
	lost := st.longLost || st.longOn != nil && st.longOn != b
	switch cmd {
	case wire.ComStmtSendLong:
		st.longLost = lost
	case wire.ComStmtExecute, wire.ComStmtReset:
		st.longOn, st.longLost = nil, false // an execute or reset consumes it
		if lost && cmd == wire.ComStmtExecute {
			s.execTypes(pkt, st, 0) // the client will not send its types again
			s.release(b)
			return s.reply(errLongDataLost)
		}
	}
	bs, ok := b.stmts[id]
	if !ok {
		res, err := b.exec(wire.ComStmtPrepare, st.sql, s.caps)
		if err != nil {
			lostTx := s.dropBroken(b)
			switch {
			case noReply:
				st.longLost = true
				return nil
			case lostTx:
				return s.reply(errTxAborted)
			}
			return s.reply(errBackend)
		}
		if res.Err != nil {
			s.release(b)
			if noReply {
				st.longLost = true
				return nil
			}
			return s.reply(res.Err)
		}
		bs = bstmt{id: res.StmtID}
	}
	binary.LittleEndian.PutUint32(pkt[1:], bs.id)
	if noReply { // SEND_LONG_DATA
		b.stmts[id] = bs
		b.c.Seq = 0
		if err := b.c.WriteFlush(pkt); err != nil {
			s.dropBroken(b)
			st.longLost = true
			return nil
		}
		st.longOn = b
		s.keep(b) // long data must reach the same connection as the execute
		return nil
	}
	if cmd == wire.ComStmtExecute {
		pkt, bs.typesGen = s.execTypes(pkt, st, bs.typesGen)
	}
	b.stmts[id] = bs
	res, dropped, err := s.roundTrip(b, pkt, st.sql, func() (wire.Result, error) {
		return wire.RelayResponse(b.c, s.cl, cmd, s.caps)
	})
	if err != nil || dropped {
		return err
	}
	if res.Err != nil && cmd == wire.ComStmtExecute {
		// Whether the server kept the types of a failed execute is its
		// business: send them again next time.
		bs.typesGen = 0
		b.stmts[id] = bs
	}
	s.srv.metrics.observe(kind, start, res.Err)
	if res.Err == nil && !st.readOnly && !s.afterWrite(b, kind) {
		return nil
	}
	if res.HasStatus && res.Status&wire.StatusCursorExists != 0 {
		s.keep(b) // a cursor lives on this connection
		return nil
	}
	s.release(b)
	return nil
}

// execTypes records the parameter types an execute carries, or puts the
// statement's latest types into one that omits them when the backend
// statement has not got them (have: its bstmt.typesGen). It returns the
// packet to send and the types generation the backend will then have.
func (s *session) execTypes(pkt []byte, st *pstmt, have uint32) ([]byte, uint32) {
	if st.params == 0 {
		return pkt, have
	}
	bound, types, ok := wire.ExecParams(pkt, st.params)
	switch {
	case !ok: // malformed: let the server judge it
		return pkt, have
	case bound:
		if st.typesGen == 0 || !bytes.Equal(types, st.types) {
			st.types = append(st.types[:0], types...)
			st.typesGen++
		}
		return pkt, st.typesGen
	case st.typesGen == 0 || have == st.typesGen:
		return pkt, have
	}
	out, ok := wire.ExecWithTypes(s.execBuf[:0], pkt, st.params, st.types)
	if !ok {
		return pkt, have
	}
	s.execBuf = out
	return out, st.typesGen
}

// closeStmt forgets statement id and closes it on the held connection
// (COM_STMT_CLOSE has no answer: the packet is buffered and leaves with
// the next command on that connection).
func (s *session) closeStmt(id uint32) {
	s.forgetStmt(id)
	s.closes++
	// Under mu: see stmtRoute. sendClose only buffers.
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.held
	if b == nil {
		return
	}
	if bs, ok := b.stmts[id]; ok {
		delete(b.stmts, id)
		s.sendClose(b, bs.id)
	}
	b.closes = s.closes
}

// closeStale closes on b, which this session used before, the statements
// the client closed meanwhile.
func (s *session) closeStale(b *backend) {
	if b.closes == s.closes {
		return
	}
	for id, bs := range b.stmts {
		if _, ok := s.stmts[id]; !ok {
			delete(b.stmts, id)
			s.sendClose(b, bs.id)
		}
	}
	b.closes = s.closes
}

func (s *session) sendClose(b *backend, bid uint32) {
	var p [5]byte
	p[0] = wire.ComStmtClose
	binary.LittleEndian.PutUint32(p[1:], bid)
	b.c.Seq = 0
	_ = b.c.WritePacket(p[:]) // a write error shows on the next command
}
