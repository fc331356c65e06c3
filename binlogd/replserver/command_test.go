package replserver

import (
	"context"
	"encoding/binary"
	"errors"
	"testing"
	"time"

	"phxgo/binlogd/binlog"
)

func testSession() *session {
	return newSession(map[string]string{"server_id": "100", "gtid_domain_id": "0", "binlog_checksum": "CRC32",
		"version": fdeServerVersion, "rpl_semi_sync_master_enabled": "OFF"},
		func() time.Time { return time.Unix(1700000000, 0) })
}

// The statements a MariaDB 10.11 replica's IO thread sends before
// COM_BINLOG_DUMP (captured from the real replica in replica_test.go via
// the "query not recognized" log: none were unrecognized).
func TestReplicaConnectQueries(t *testing.T) {
	s := testSession()
	cases := []struct {
		q    string
		want []any // nil: OK packet
	}{
		{"SELECT UNIX_TIMESTAMP()", []any{"1700000000"}},
		{"SHOW VARIABLES LIKE 'SERVER_ID'", []any{"server_id", "100"}},
		{"SET @master_heartbeat_period= 1000000000", nil},
		{"SET @master_binlog_checksum= @@global.binlog_checksum", nil},
		{"SELECT @master_binlog_checksum", []any{"CRC32"}},
		{"SET @mariadb_slave_capability=4", nil},
		{"SELECT @@GLOBAL.gtid_domain_id", []any{"0"}},
		{"SET @slave_connect_state='0-1-5,1-2-7'", nil},
		{"SET @slave_gtid_strict_mode=1", nil},
		{"SET @slave_gtid_ignore_duplicates=0", nil},
		{"SELECT @slave_connect_state", []any{"0-1-5,1-2-7"}},
		{"SELECT @@version LIMIT 1", []any{fdeServerVersion}},
		{"SELECT @nope", []any{nil}},
	}
	for _, c := range cases {
		r, _ := s.answer(c.q)
		if r.err != nil {
			t.Fatalf("%s: %v", c.q, r.err)
		}
		if c.want == nil {
			continue
		}
		if len(r.rows) != 1 || len(r.rows[0]) != len(c.want) {
			t.Fatalf("%s: rows %v", c.q, r.rows)
		}
		for i := range c.want {
			if r.rows[0][i] != c.want[i] {
				t.Fatalf("%s: got %v want %v", c.q, r.rows[0], c.want)
			}
		}
	}
	if v, ok := s.userVar("master_heartbeat_period"); !ok || v != "1000000000" {
		t.Fatal(v, ok)
	}
	// The semi-sync probe gets an empty answer: the replica stays async.
	if r, _ := s.answer("SHOW GLOBAL VARIABLES LIKE 'rpl_semi_sync_master_enabled'"); r.err != nil || len(r.rows) != 0 {
		t.Fatalf("semi-sync probe answered %v %v", r.rows, r.err)
	}
	for q, code := range map[string]uint16{"SELECT @@no_such_var": erUnknownSystemVariable, "SELECT foo(1)": erNotSupportedYet,
		"SHOW MASTER STATUS": erNotSupportedYet, "DROP TABLE x": erNotSupportedYet, "": erParse} {
		if r, _ := s.answer(q); r.err == nil || r.err.Code != code {
			t.Fatalf("%q: %v", q, r.err)
		}
	}
}

func TestDecodeCommand(t *testing.T) {
	dump := []byte{comBinlogDump, 4, 0, 0, 0, 2, 0, 7, 0, 0, 0}
	dump = append(dump, "f.000001"...)
	c, err := decodeCommand(dump)
	if err != nil || c.dump.pos != 4 || c.dump.flags != 2 || c.dump.serverID != 7 || c.dump.file != "f.000001" {
		t.Fatalf("%+v %v", c, err)
	}
	reg := binary.LittleEndian.AppendUint32([]byte{comRegisterSlave}, 9)
	reg = append(reg, 2, 'h', 'o', 1, 'u', 0)
	reg = binary.LittleEndian.AppendUint16(reg, 3306)
	reg = append(reg, make([]byte, 8)...)
	c, err = decodeCommand(reg)
	if err != nil || c.register.serverID != 9 || c.register.host != "ho" || c.register.user != "u" || c.register.port != 3306 {
		t.Fatalf("%+v %v", c, err)
	}
	for _, bad := range [][]byte{nil, {comBinlogDump, 1, 2}, {comRegisterSlave, 1, 0, 0, 0, 9, 'x'}} {
		if _, err := decodeCommand(bad); !errors.Is(err, ErrBadPacket) {
			t.Fatalf("%x: %v", bad, err)
		}
	}
}

func TestLikeMatch(t *testing.T) {
	for _, c := range []struct {
		p, s string
		ok   bool
	}{{"server_id", "server_id", true}, {"server%", "server_id", true}, {"%_id", "server_id", true},
		{"rpl%enabled", "rpl_semi_sync_master_enabled", true}, {"s_rver_id", "server_id", true},
		{"server", "server_id", false}, {"%x%", "server_id", false}, {"", "", true}} {
		if likeMatch(c.p, c.s) != c.ok {
			t.Errorf("%q LIKE %q", c.s, c.p)
		}
	}
}

// fakeTxn is a transaction of two framed events with CRC footers.
func fakeTxn(g binlog.GTID) binlog.Txn {
	ev := heartbeat(1, "x", 0)
	return binlog.Txn{GTID: g, Events: append(append([]byte{}, ev...), ev...)}
}

func TestMemorySource(t *testing.T) {
	ctx := context.Background()
	m := NewMemorySource(0)
	g := func(seq uint64) binlog.GTID { return binlog.GTID{Domain: 0, Server: 1, Seq: seq} }
	if err := m.Append(fakeTxn(g(1)), fakeTxn(g(2)), fakeTxn(g(3))); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []binlog.Txn{fakeTxn(g(3)), fakeTxn(binlog.GTID{Domain: 1, Server: 1, Seq: 9}), {GTID: g(9), Events: []byte{1, 2}}} {
		if err := m.Append(bad); !errors.Is(err, ErrBadTxn) {
			t.Fatalf("%v accepted: %v", bad.GTID, err)
		}
	}
	c, err := m.Open(ctx, binlog.GTIDList{g(1)})
	if err != nil {
		t.Fatal(err)
	}
	if tx, _ := c.Next(ctx); tx.GTID != g(2) {
		t.Fatal(tx.GTID)
	}
	// Next blocks until Append.
	got := make(chan binlog.GTID, 2)
	go func() {
		for i := 0; i < 2; i++ {
			tx, err := c.Next(ctx)
			if err != nil {
				return
			}
			got <- tx.GTID
		}
	}()
	if x := <-got; x != g(3) {
		t.Fatal(x)
	}
	if err := m.Append(fakeTxn(g(4))); err != nil {
		t.Fatal(err)
	}
	if x := <-got; x != g(4) {
		t.Fatal(x)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := c.Next(cctx); !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	if _, err := m.Open(ctx, binlog.GTIDList{g(9)}); !errors.Is(err, ErrUnknownPosition) {
		t.Fatal("ahead accepted", err)
	}
	if _, err := m.Open(ctx, binlog.GTIDList{{Domain: 0, Server: 7, Seq: 2}}); !errors.Is(err, ErrUnknownPosition) {
		t.Fatal("fork accepted", err)
	}
	if err := m.PurgeThrough(g(2)); err != nil {
		t.Fatal(err)
	}
	for _, pos := range []binlog.GTIDList{nil, {g(1)}} {
		if _, err := m.Open(ctx, pos); !errors.Is(err, ErrPurged) {
			t.Fatalf("%v: %v", pos, err)
		}
	}
	c, err = m.Open(ctx, binlog.GTIDList{g(2)})
	if err != nil {
		t.Fatal(err)
	}
	if tx, _ := c.Next(ctx); tx.GTID != g(3) {
		t.Fatal(tx.GTID)
	}
	old, _ := m.Open(ctx, binlog.GTIDList{g(2)})
	if err := m.PurgeThrough(g(3)); err != nil {
		t.Fatal(err)
	}
	if _, err := old.Next(ctx); !errors.Is(err, ErrPurged) {
		t.Fatal("purged cursor read", err)
	}
	if m.Last() != g(4) || m.Len() != 4 {
		t.Fatal(m.Last(), m.Len())
	}
}

// FuzzCommand feeds arbitrary packets to the decoder and the query
// answerer: they must not panic, and a decoded dump must be consistent.
func FuzzCommand(f *testing.F) {
	f.Add([]byte{comBinlogDump, 4, 0, 0, 0, 2, 0, 7, 0, 0, 0})
	f.Add(append([]byte{comQuery}, "SET @slave_connect_state='0-1-5', @x := 'a,b'"...))
	f.Add(append([]byte{comQuery}, "SELECT @@GLOBAL.gtid_domain_id, UNIX_TIMESTAMP() AS t LIMIT 1"...))
	f.Add(append([]byte{comQuery}, "SHOW VARIABLES LIKE '%s_rver%'"...))
	f.Add([]byte{comRegisterSlave, 1, 0, 0, 0, 0, 0, 0, 0xea, 0x0c})
	f.Fuzz(func(t *testing.T, p []byte) {
		c, err := decodeCommand(p)
		if err != nil {
			return
		}
		if c.code == comQuery {
			s := testSession()
			r, _ := s.answer(c.query)
			if r.err == nil && r.names != nil {
				for _, row := range r.rows {
					if len(row) != len(r.names) {
						t.Fatal("row width")
					}
				}
			}
		}
	})
}
