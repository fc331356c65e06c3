package sqlproxy

import (
	"context"
	"testing"
	"time"

	"phxgo/sqlproxy/wire"
)

// TestUnknownCommandsRefused is the red-team attack of session 37: a
// client sent COM_PROCESS_INFO, whose answer is a result set, twice; the
// proxy relayed one frame of each and pooled the connection with the
// rest unread, so the next client on it got the attacker's result set
// for its own query. Commands whose answers the proxy does not know the
// shape of are now refused with 1047 and never reach MariaDB, and the
// next client on the pooled connection gets its own answers.
func TestUnknownCommandsRefused(t *testing.T) {
	insts := startInstances(t, 1)
	m := insts[0]
	p := startProxy(t, 1, masterView(m), Linearizable, []string{m.Addr()}, func(c *Config) { c.Hold = time.Millisecond })

	attacker := rawConnect(t, p.addr, "")
	for _, cmd := range []byte{0x00 /* SLEEP */, 0x05 /* CREATE_DB */, 0x08 /* SHUTDOWN */, 0x0a /* PROCESS_INFO */, 0x0d, /* DEBUG */
		0x12 /* BINLOG_DUMP */, 0x15 /* REGISTER_SLAVE */, 0x1e /* BINLOG_DUMP_GTID */, 0x20, 0xfe, 0xff} {
		res, err := attacker.b.exec(cmd, nil, rawCaps)
		if err != nil {
			t.Fatalf("command 0x%02x: %v", cmd, err)
		}
		if res.Err == nil || res.Err.Code != 1047 {
			t.Fatalf("command 0x%02x: answer %+v, want error 1047", cmd, res.Err)
		}
	}
	if werr := attacker.query("DO 1"); werr != nil {
		t.Fatalf("the session after the refusals: %v", werr)
	}
	if werr := attacker.query("SELECT 'EVIL: injected by another client'"); werr != nil {
		t.Fatal(werr)
	}
	attacker.b.close()

	victim := appDB(t, p.addr, "", false)
	victim.SetMaxOpenConns(1)
	for i := range 5 {
		var got string
		if err := victim.QueryRowContext(context.Background(), "SELECT 'victim-ok'").Scan(&got); err != nil || got != "victim-ok" {
			t.Fatalf("victim query %d: %q, %v", i, got, err)
		}
	}
}

// TestSetOptionNeverPooled is the red-team attack of session 37: a client
// turned multi-statements on with COM_SET_OPTION and left; its pooled
// connection gave the next client (which had not asked for them)
// multi-statements, and with them stacked-query injection. The option
// works for the client that set it, survives its COM_RESET_CONNECTION as
// in MariaDB, and its connection is closed, not pooled, when it leaves.
func TestSetOptionNeverPooled(t *testing.T) {
	insts := startInstances(t, 1)
	m := insts[0]
	p := startProxy(t, 1, masterView(m), Linearizable, []string{m.Addr()}, func(c *Config) { c.Hold = time.Millisecond })

	on := []byte{0, 0} // MYSQL_OPTION_MULTI_STATEMENTS_ON
	setter := rawConnect(t, p.addr, "")
	if res, err := setter.b.exec(wire.ComSetOption, on, rawCaps); err != nil || res.Err != nil {
		t.Fatalf("COM_SET_OPTION: %v %v", err, res.Err)
	}
	setter.b.close()
	for i := range 4 {
		next := rawConnect(t, p.addr, "")
		if werr := next.query("DO 1; DO 2"); werr == nil || werr.Code != 1064 {
			t.Fatalf("client %d after the one that set the option: %+v, want 1064 (no multi-statements)", i, werr)
		}
		next.b.close()
	}

	// The option works for the client that set it, past a reset.
	own := rawConnect(t, p.addr, "")
	if werr := own.query("DO 1; DO 2"); werr == nil || werr.Code != 1064 {
		t.Fatalf("multi-statements before COM_SET_OPTION: %+v, want 1064", werr)
	}
	if res, err := own.b.exec(wire.ComSetOption, on, rawCaps); err != nil || res.Err != nil {
		t.Fatalf("COM_SET_OPTION: %v %v", err, res.Err)
	}
	if werr := own.query("DO 1; DO 2"); werr != nil {
		t.Fatalf("multi-statements after COM_SET_OPTION: %v", werr)
	}
	if res, err := own.b.exec(wire.ComResetConnection, nil, rawCaps); err != nil || res.Err != nil {
		t.Fatalf("COM_RESET_CONNECTION: %v %v", err, res.Err)
	}
	if werr := own.query("DO 1; DO 2"); werr != nil {
		t.Fatalf("multi-statements after COM_RESET_CONNECTION (MariaDB keeps the option): %v", werr)
	}
}

// TestSetStatementNotReplayed is the red-team finding of session 37: SET
// STATEMENT … FOR INSERT was kept as session state and replayed on the
// session's next backend connection, so one INSERT made two rows.
func TestSetStatementNotReplayed(t *testing.T) {
	insts := startInstances(t, 1)
	m := insts[0]
	setup := appDB(t, m.Addr(), "", false)
	mustExec(t, setup, "CREATE DATABASE test_setstmt")
	mustExec(t, setup, "CREATE TABLE test_setstmt.r (id INT AUTO_INCREMENT PRIMARY KEY, v VARCHAR(10))")
	p := startProxy(t, 1, masterView(m), Linearizable, []string{m.Addr()}, func(c *Config) { c.Hold = time.Millisecond })

	a, b := appDB(t, p.addr, "test_setstmt", false), appDB(t, p.addr, "test_setstmt", false)
	a.SetMaxOpenConns(1)
	b.SetMaxOpenConns(1)
	mustExec(t, a, "SET STATEMENT max_statement_time=0 FOR INSERT INTO r (v) VALUES ('once')")
	for range 5 {
		time.Sleep(5 * time.Millisecond) // past the hold: a's connection goes back to the pool
		mustExec(t, b, "DO 1")           // b takes it
		mustExec(t, a, "DO 1")           // a needs another: its state is replayed there
	}
	var n int
	if err := setup.QueryRowContext(context.Background(), "SELECT COUNT(*) FROM test_setstmt.r").Scan(&n); err != nil || n != 1 {
		t.Fatalf("rows after one INSERT under SET STATEMENT: %d, %v; want 1", n, err)
	}
}
