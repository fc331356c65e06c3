package sqlproxy

import (
	"context"
	"crypto/sha1"
	"encoding/binary"
	"testing"
	"time"

	"phxgo/binlogd/mysqld"
	"phxgo/sqlproxy/wire"
)

// rawDialExt logs in to the proxy at addr as MariaDB Connector/C does
// with a MariaDB server: ClientMySQL clear, MARIADB_CLIENT_CACHE_METADATA
// asked for. The proxy must grant it.
func rawDialExt(t *testing.T, addr, user, pass string) *rawClient {
	t.Helper()
	stage1 := sha1.Sum([]byte(pass))
	key := poolKey{addr: addr, user: user, stage1: string(stage1[:]), caps: rawCaps &^ wire.ClientMySQL,
		ext: wire.MariaDBCacheMetadata, charset: 45}
	b, werr, err := dial(context.Background(), DialFrom(nil, 5*time.Second), key, routeMaster, "", 5*time.Second, 5*time.Second, nil)
	if err != nil || werr != nil {
		t.Fatalf("connect to %s: %v %v", addr, err, werr)
	}
	t.Cleanup(b.close)
	if !b.c.MetaFlag {
		t.Fatal("the proxy did not grant MARIADB_CLIENT_CACHE_METADATA")
	}
	return &rawClient{t: t, b: b}
}

// executeInt runs statement id with one INT parameter and returns the
// first column of each row and the column count's "metadata follows"
// byte.
func (c *rawClient) executeInt(id uint32, v int32) (rows []string, metaFollows byte) {
	c.t.Helper()
	p := binary.LittleEndian.AppendUint32([]byte{wire.ComStmtExecute}, id)
	p = append(p, 0, 1, 0, 0, 0) // no cursor, iteration count 1
	p = append(p, 0, 1, 0x03, 0) // null bitmap, new types: LONG signed
	p = binary.LittleEndian.AppendUint32(p, uint32(v))
	c.send(p)
	first, err := c.b.c.ReadPacket()
	if err != nil {
		c.t.Fatal(err)
	}
	if first[0] == wire.HeaderErr {
		c.t.Fatalf("execute: %v", wire.ParseError(first))
	}
	ncol, k, ok := wire.ReadLenEnc(first)
	if !ok || len(first) != k+1 || first[k] > 1 {
		c.t.Fatalf("column count packet %x: want a count and one metadata byte", first)
	}
	skip := 1 // the EOF after the definitions
	if first[k] == 1 {
		skip += int(ncol)
	}
	for range skip {
		if _, err := c.b.c.ReadPacket(); err != nil {
			c.t.Fatal(err)
		}
	}
	for {
		r, err := c.b.c.ReadPacket()
		if err != nil {
			c.t.Fatal(err)
		}
		switch {
		case r[0] == wire.HeaderErr:
			c.t.Fatalf("execute: %v", wire.ParseError(r))
		case r[0] == wire.HeaderEOF && len(r) < 9:
			return rows, first[k]
		}
		s, _, ok := wire.ReadLenEncString(r[1+(int(ncol)+9)/8:])
		if !ok {
			c.t.Fatalf("binary row %x", r)
		}
		rows = append(rows, string(s))
	}
}

// TestCacheMetadata: a client that negotiates MariaDB's
// MARIADB_CLIENT_CACHE_METADATA through the proxy gets it from MariaDB
// too: repeated executes of a prepared statement come back without
// their column definitions (the proxy used to withhold the capability,
// and MariaDB sent about 50 more bytes per point select), and every
// result is still relayed whole. Text queries work on the same session.
func TestCacheMetadata(t *testing.T) {
	m := startInstances(t, 1)[0]
	setup := appDB(t, m.Addr(), "", false)
	mustExec(t, setup, "CREATE DATABASE app_cm")
	mustExec(t, setup, "CREATE TABLE app_cm.t (id INT PRIMARY KEY, v VARCHAR(10))")
	mustExec(t, setup, "INSERT INTO app_cm.t VALUES (1, 'one'), (2, 'two'), (3, 'three')")
	p := startProxy(t, 1, masterView(m), Linearizable, []string{m.Addr()}, nil)
	a := mysqld.DefaultAccounts()
	c := rawDialExt(t, p.addr, a.AppUser, a.AppPassword)

	id, params := c.prepare("SELECT v FROM app_cm.t WHERE id = ?")
	if params != 1 {
		t.Fatalf("prepare: %d parameters", params)
	}
	skipped := 0
	for i, want := range []string{"one", "two", "three", "one", "two"} {
		rows, meta := c.executeInt(id, int32(i%3+1))
		if len(rows) != 1 || rows[0] != want {
			t.Fatalf("execute %d: %q, want [%s]", i, rows, want)
		}
		if meta == 0 {
			skipped++
		}
	}
	if skipped == 0 {
		t.Fatal("MariaDB sent the column definitions on every execute: the capability did not reach it")
	}
	if werr := c.query("SELECT v FROM app_cm.t WHERE id = 3"); werr != nil {
		t.Fatalf("text query: %v", werr)
	}
}

// TestCacheMetadataAdded: a backend that does not offer the capability
// (here a fake MariaDB, which has no extended capabilities) still serves a client that negotiated it with
// the proxy: the relay adds the "metadata follows" byte (1) to each
// column count, and the definitions follow as they came.
func TestCacheMetadataAdded(t *testing.T) {
	f := startFakes(t, 1)[0]
	mustFake(t, f, "CREATE TABLE app.t (k INT PRIMARY KEY, v INT)")
	mustFake(t, f, "INSERT INTO app.t VALUES (1, 7)")
	p := startFakeProxy(t, 1, masterView(f), Linearizable, nil)
	c := rawDialExt(t, p.addr, fakeUser, fakePass)
	c.send(append([]byte{wire.ComQuery}, "SELECT v FROM app.t WHERE k = 1"...))
	var got [][]byte
	for range 5 { // column count, definition, EOF, row, EOF
		pkt, err := c.b.c.ReadPacket()
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, pkt)
	}
	if string(got[0]) != "\x01\x01" {
		t.Fatalf("column count %x, want 0101 (one column, metadata follows)", got[0])
	}
	if got[2][0] != wire.HeaderEOF || string(got[3]) != "\x017" || got[4][0] != wire.HeaderEOF {
		t.Fatalf("result set %x", got)
	}
}
