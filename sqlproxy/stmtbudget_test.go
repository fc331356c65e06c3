package sqlproxy

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"phxgo/sqlproxy/wire"
)

// TestPreparedStatementBudget: the statement texts the proxy keeps are
// bounded per session in count and bytes, and across sessions in bytes
// (stmtbudget.go); a prepare past a bound gets 1461 and reaches no
// backend, closing statements or ending a session makes room again, and
// an execute of "the statement prepared last" after a refused prepare
// finds no statement rather than running the one before.
func TestPreparedStatementBudget(t *testing.T) {
	m := startInstances(t, 1)[0]
	p := startProxy(t, 1, masterView(m), Linearizable, []string{m.Addr()}, func(c *Config) {
		c.stmtBudget = stmtBudget{stmts: 3, sessionBytes: 1000, proxyBytes: 1500}
	})
	prep := func(c *rawClient, sql string) (uint32, *wire.Error) {
		t.Helper()
		res, err := c.b.exec(wire.ComStmtPrepare, []byte(sql), rawCaps)
		if err != nil {
			t.Fatalf("prepare: %v", err)
		}
		return res.StmtID, res.Err
	}
	mustPrep := func(c *rawClient, sql string) uint32 {
		t.Helper()
		id, werr := prep(c, sql)
		if werr != nil {
			t.Fatalf("prepare %.20q: %v", sql, werr)
		}
		return id
	}
	refused := func(c *rawClient, sql, why string) {
		t.Helper()
		if _, werr := prep(c, sql); werr == nil || werr.Code != 1461 || !strings.Contains(werr.Message, why) {
			t.Fatalf("prepare %.20q: %v, want 1461 saying %q", sql, werr, why)
		}
	}

	a := rawConnect(t, p.addr, "")
	var ids []uint32
	for i := range 3 {
		ids = append(ids, mustPrep(a, fmt.Sprintf("SELECT 'a%d'", i)))
	}
	refused(a, "SELECT 'a3'", "this session keeps 3")
	if rows, werr := a.execute(lastPrepared, 0, nil, nil); werr == nil || werr.Code != errUnknownStmt.Code {
		t.Fatalf("execute of the statement prepared last, after a refused prepare: %q %v, want %v", rows, werr, errUnknownStmt)
	}
	a.close(ids[0])
	mustPrep(a, "SELECT 'a4'")

	pad := "SELECT '" + strings.Repeat("x", 880) + "'"
	b := rawConnect(t, p.addr, "")
	mustPrep(b, pad)
	refused(b, "SELECT '"+strings.Repeat("y", 200)+"'", "bytes of statement text")

	c := rawConnect(t, p.addr, "")
	refused(c, pad, "the proxy's sessions keep")
	b.b.close() // its session's statements go with it
	deadline := time.Now().Add(10 * time.Second)
	for p.srv.stmtBytes.Load() > 100 {
		if time.Now().After(deadline) {
			t.Fatalf("the proxy still counts %d bytes of statements after a session ended", p.srv.stmtBytes.Load())
		}
		time.Sleep(10 * time.Millisecond)
	}
	mustPrep(c, pad)
}
