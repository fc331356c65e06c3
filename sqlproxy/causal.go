package sqlproxy

import (
	"fmt"

	"phxgo/sqlproxy/classify"
	"phxgo/sqlproxy/wire"
)

// Causal mode: read-your-writes on replicas.
//
//	write ──▶ master ── OK ──▶ client
//	            └─ SELECT @@last_gtid (same connection) ─▶ session.written
//	read ──▶ replica R: R known to cover written? ─ yes ─▶ run it on R
//	                     └─ no: SELECT MASTER_GTID_WAIT(written, CausalWait) on R
//	                           0 ─▶ run it on R;  -1 / NULL / error ─▶ the master
//
// After a statement that may have written (not a read, outside a
// transaction, so a commit happened) the session asks the connection that
// ran it for @@last_gtid, the GTID of the last transaction that
// connection committed. Through a forwarding hop the connection behind
// the master's proxy is not ours to ask, so it asks for
// @@gtid_binlog_pos, the master's whole binlog position, which includes
// the write. Either is a position of committed (hence chosen) transactions
// at least as new as the session's write, so waiting for it is always
// enough; the session keeps the per-domain maximum.

// mayWrite reports whether a successful statement may have committed a
// transaction the session must later read.
func mayWrite(info classify.Info) bool {
	switch info.Kind {
	case classify.Read:
		return info.Multi || info.Pins // SELECT … INTO @v, or several statements
	case classify.Set, classify.Use, classify.Begin, classify.Rollback:
		return false
	}
	return true
}

// noteWrite records the session's newest write position after a
// statement that may have written ran on the master through b. After a
// write whose position was lost (causalUnknown) it asks for the master's
// whole binlog position, which covers that write too. recorded reports
// that the session now knows a position covering all its writes.
func (s *session) noteWrite(b *backend, kind routeKind) (recorded bool, err error) {
	q := "SELECT @@last_gtid"
	if kind == routeForward || s.causalUnknown {
		q = "SELECT @@gtid_binlog_pos"
	}
	v, werr, err := b.queryValue(q)
	if err != nil {
		return false, err
	}
	if werr != nil {
		return false, nil
	}
	if v == "" { // no write on this connection yet, or an empty binlog
		return !s.causalUnknown, nil
	}
	pos, perr := parseGTIDPos(v)
	if perr != nil {
		s.srv.log.Warn("sqlproxy: unparsable GTID from master", "value", v, "err", perr)
		return false, nil
	}
	if s.written == nil {
		s.written = gtidPos{}
	}
	if s.written.merge(pos) {
		clear(s.causalOK)
	}
	return true, nil
}

// causalReady reports whether replica backend b may serve the session's
// read: the replica has applied the session's last write, known from an
// earlier wait or health check, or after MASTER_GTID_WAIT returns 0
// within CausalWait. An error means b is broken (close it).
func (s *session) causalReady(b *backend) (bool, error) {
	if s.mode != Causal || len(s.written) == 0 {
		return true, nil
	}
	addr := b.key.addr
	if _, ok := s.causalOK[addr]; ok {
		return true, nil
	}
	if s.srv.health.covers(addr, s.written) {
		s.markCausal(addr)
		return true, nil
	}
	secs := s.srv.rules().CausalWait.Seconds()
	v, werr, err := b.queryValue(fmt.Sprintf("SELECT MASTER_GTID_WAIT('%s', %.3f)", s.written, secs))
	if err != nil {
		return false, err
	}
	if werr != nil || v != "0" {
		s.srv.metrics.errors.WithLabelValues("causal_fallback").Inc()
		return false, nil
	}
	s.markCausal(addr)
	return true, nil
}

func (s *session) markCausal(addr string) {
	if s.causalOK == nil {
		s.causalOK = map[string]struct{}{}
	}
	s.causalOK[addr] = struct{}{}
}

// queryValue runs a one-value query on b (which the caller owns) and
// returns the value ("" for NULL or no row).
func (b *backend) queryValue(q string) (string, *wire.Error, error) {
	b.c.Seq = 0
	if err := b.c.WriteFlush(append([]byte{wire.ComQuery}, q...)); err != nil {
		return "", nil, err
	}
	row, werr, err := wire.ReadRow(b.c, b.key.caps)
	if err != nil || werr != nil || len(row) == 0 || row[0] == nil {
		return "", werr, err
	}
	return *row[0], nil, nil
}
