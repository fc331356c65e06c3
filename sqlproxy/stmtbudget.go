package sqlproxy

import (
	"fmt"

	"phxgo/sqlproxy/wire"
)

// The prepared statements the proxy keeps. A session's statement texts
// stay in the proxy while the client keeps the statements, to prepare
// them again on whichever backend connection runs them next; MariaDB's
// own bounds (max_prepared_stmt_count, a connection's memory) do not
// reach this copy, which outlives a backend connection's reset. A client
// with the app password prepared ten 50 MiB statements and grew sqlproxy
// by 1 GB (red-team test, session 39). So a session keeps at most
// stmtBudget.stmts statements and stmtBudget.sessionBytes of their text,
// and all sessions together at most stmtBudget.proxyBytes; past that a
// prepare gets MariaDB's own 1461 and nothing is sent.
type stmtBudget struct {
	stmts        int
	sessionBytes int
	proxyBytes   int64
}

var defaultStmtBudget = stmtBudget{
	stmts:        16382,    // MariaDB's default max_prepared_stmt_count
	sessionBytes: 64 << 20, // a few big statements; thousands of ordinary ones
	proxyBytes:   1 << 30,
}

// errStmtBudget is the answer to a prepare past one of the bounds.
func errStmtBudget(why string) *wire.Error {
	return &wire.Error{Code: 1461, SQLState: "42000", Message: "phxgo: cannot keep another prepared statement: " + why + "; close some (COM_STMT_CLOSE)"}
}

// stmtRoom says why keeping a statement of n bytes would pass a bound,
// or nil. The proxy-wide check and the add that follows are not one
// step: concurrent prepares may pass it together by at most their own
// sizes, each under max_allowed_packet.
func (s *session) stmtRoom(n int) *wire.Error {
	lim := s.srv.stmtBudget
	switch {
	case len(s.stmts) >= lim.stmts:
		return errStmtBudget(fmt.Sprintf("this session keeps %d, the most one may", len(s.stmts)))
	case s.stmtBytes+n > lim.sessionBytes:
		return errStmtBudget(fmt.Sprintf("this session keeps %d bytes of statement text and this one has %d, over the %d one may", s.stmtBytes, n, lim.sessionBytes))
	case s.srv.stmtBytes.Load()+int64(n) > lim.proxyBytes:
		return errStmtBudget(fmt.Sprintf("the proxy's sessions keep %d bytes of statement text, near the %d it holds", s.srv.stmtBytes.Load(), lim.proxyBytes))
	}
	return nil
}

func (s *session) keepStmt(id uint32, st *pstmt) {
	s.stmts[id] = st
	s.stmtBytes += len(st.sql)
	s.srv.stmtBytes.Add(int64(len(st.sql)))
}

func (s *session) forgetStmt(id uint32) {
	if st := s.stmts[id]; st != nil {
		s.stmtBytes -= len(st.sql)
		s.srv.stmtBytes.Add(-int64(len(st.sql)))
		delete(s.stmts, id)
	}
}

// forgetStmts drops them all (COM_RESET_CONNECTION, the session's end).
func (s *session) forgetStmts() {
	s.srv.stmtBytes.Add(-int64(s.stmtBytes))
	s.stmtBytes = 0
	clear(s.stmts)
}
