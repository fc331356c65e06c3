package fakebackend

import (
	"crypto/sha1"
	"net"
	"testing"
	"time"

	"phxgo/sqlproxy/wire"
)

// client is a raw protocol client, the way sqlproxy's backend dial logs in.
type client struct {
	t *testing.T
	c *wire.Conn
}

func login(t *testing.T, s *Server, user, pw, db string, caps uint32) (*client, *wire.Error) {
	t.Helper()
	nc, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
	c := wire.NewConn(nc)
	p, err := c.ReadPacket()
	if err != nil {
		t.Fatal(err)
	}
	g, err := wire.ParseGreeting(p)
	if err != nil {
		t.Fatal(err)
	}
	if g.Plugin != wire.NativePlugin || g.Status != wire.StatusAutocommit || g.Caps&wire.ClientSSL != 0 {
		t.Fatalf("greeting %+v", g)
	}
	s1 := sha1.Sum([]byte(pw))
	r := &wire.Response{Caps: caps & g.Caps, MaxPacket: 1 << 24, Charset: 45, User: user,
		Auth: wire.ScrambleFromStage1(g.Salt, s1[:]), DB: db, Plugin: wire.NativePlugin}
	if db != "" {
		r.Caps |= wire.ClientConnectWithDB
	}
	if err := c.WriteFlush(r.Encode()); err != nil {
		t.Fatal(err)
	}
	p, err = c.ReadPacket()
	if err != nil {
		t.Fatal(err)
	}
	if p[0] == wire.HeaderErr {
		return nil, wire.ParseError(p)
	}
	if st, ok := wire.StatusOf(p); !ok || st != wire.StatusAutocommit {
		t.Fatalf("login OK %x", p)
	}
	return &client{t: t, c: c}, nil
}

// query sends sql and returns the answer's packets.
func (c *client) query(sql string) [][]byte {
	c.t.Helper()
	c.c.Seq = 0
	if err := c.c.WriteFlush(append([]byte{wire.ComQuery}, sql...)); err != nil {
		c.t.Fatal(err)
	}
	var out [][]byte
	eofs := 0
	for {
		p, err := c.c.ReadPacket()
		if err != nil {
			c.t.Fatalf("%s: %v after %d packets", sql, err, len(out))
		}
		out = append(out, p)
		switch {
		case len(out) == 1 && (p[0] == wire.HeaderOK || p[0] == wire.HeaderErr):
			return out
		case p[0] == wire.HeaderEOF && len(p) < 9:
			eofs++
			if eofs == 2 || p[0] == wire.HeaderEOF && len(p) != 5 {
				return out
			}
		}
	}
}

// status is the status flags of an answer's last packet.
func status(t *testing.T, pkts [][]byte) uint16 {
	t.Helper()
	st, ok := wire.StatusOf(pkts[len(pkts)-1])
	if !ok {
		t.Fatalf("no status in %x", pkts[len(pkts)-1])
	}
	return st
}

// TestProtocol: login, result sets with and without
// CLIENT_DEPRECATE_EOF, and the status flags MariaDB sets.
func TestProtocol(t *testing.T) {
	s, err := Start(7)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.Users = map[string]string{"app": "pw"}
	if _, err := s.Exec("CREATE DATABASE app"); err != nil {
		t.Fatal(err)
	}
	if _, e := login(t, s, "app", "wrong", "", wire.ServerCaps); e == nil || e.Code != 1045 {
		t.Fatalf("wrong password: %v", e)
	}
	if _, e := login(t, s, "app", "pw", "nope", wire.ServerCaps); e == nil || e.Code != 1049 {
		t.Fatalf("unknown database: %v", e)
	}

	classic, e := login(t, s, "app", "pw", "app", wire.ServerCaps&^wire.ClientDeprecateEOF)
	if e != nil {
		t.Fatal(e)
	}
	// count, column, EOF, row, EOF
	pkts := classic.query("SELECT @@server_id")
	if len(pkts) != 5 || len(pkts[2]) != 5 || len(pkts[4]) != 5 || string(pkts[3]) != "\x017" {
		t.Fatalf("classic result set %x", pkts)
	}
	modern, e := login(t, s, "app", "pw", "app", wire.ServerCaps)
	if e != nil {
		t.Fatal(e)
	}
	// count, column, row, OK with 0xfe
	pkts = modern.query("SELECT @@server_id")
	if len(pkts) != 4 || pkts[3][0] != wire.HeaderEOF || len(pkts[3]) != 7 {
		t.Fatalf("deprecate-EOF result set %x", pkts)
	}

	c := modern
	steps := []struct {
		sql  string
		want uint16
	}{
		{"CREATE TABLE t (k INT PRIMARY KEY, v INT)", wire.StatusAutocommit},
		{"BEGIN", wire.StatusAutocommit | wire.StatusInTrans},
		{"INSERT INTO t VALUES (1, 1)", wire.StatusAutocommit | wire.StatusInTrans},
		{"SELECT COUNT(*) FROM t", wire.StatusAutocommit | wire.StatusInTrans},
		{"CREATE TABLE u (k INT)", wire.StatusAutocommit}, // implicit commit
		{"START TRANSACTION READ ONLY", wire.StatusAutocommit | wire.StatusInTrans | wire.StatusInTransReadonly},
		{"ROLLBACK", wire.StatusAutocommit},
		{"SET autocommit=0", 0},
		{"SELECT 1", 0}, // no table: no transaction yet
		{"SELECT k FROM t", wire.StatusInTrans},
		{"COMMIT", 0},
		{"INSERT INTO t VALUES (2, 2)", wire.StatusInTrans},
		{"SET autocommit=1", wire.StatusAutocommit}, // commits
		{"LOCK TABLES t WRITE", wire.StatusAutocommit},
	}
	for _, st := range steps {
		if got := status(t, c.query(st.sql)); got != st.want {
			t.Fatalf("%s: status %#x, want %#x", st.sql, got, st.want)
		}
	}
	if n := s.Count("SELECT COUNT(*) FROM app.t"); n != 2 {
		t.Fatalf("committed rows %d, want 2", n)
	}
	if p := c.query("SELEC 1"); wire.ParseError(p[0]).Code != 1064 {
		t.Fatalf("syntax error %x", p[0])
	}
	s.SetReadOnly(true)
	if p := c.query("INSERT INTO t VALUES (3, 3)"); wire.ParseError(p[0]).Code != 1290 {
		t.Fatalf("read_only %x", p[0])
	}
}

// TestLocksAndKill: a row lock makes another connection wait until the
// holder's transaction ends (here: it is killed, which rolls it back),
// or time out with 1205.
func TestLocksAndKill(t *testing.T) {
	s, err := Start(1)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, q := range []string{"CREATE DATABASE app", "CREATE TABLE app.t (k INT PRIMARY KEY, v INT)", "INSERT INTO app.t VALUES (1, 0)"} {
		if _, err := s.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	a, _ := login(t, s, "root", "", "app", wire.ServerCaps)
	b, _ := login(t, s, "root", "", "app", wire.ServerCaps)
	a.query("BEGIN")
	a.query("UPDATE t SET v = 1 WHERE k = 1")
	b.query("SET SESSION innodb_lock_wait_timeout = 0")
	if p := b.query("UPDATE t SET v = 2 WHERE k = 1"); wire.ParseError(p[0]).Code != 1205 {
		t.Fatalf("lock wait timeout %x", p[0])
	}
	b.query("SET SESSION innodb_lock_wait_timeout = 60")
	done := make(chan [][]byte, 1)
	go func() {
		b.c.Seq = 0
		_ = b.c.WriteFlush(append([]byte{wire.ComQuery}, "UPDATE t SET v = 2 WHERE k = 1"...))
		p, _ := b.c.ReadPacket()
		done <- [][]byte{p}
	}()
	ids := s.Conns()
	if len(ids) != 2 {
		t.Fatalf("connections %v", ids)
	}
	// a logged in first: the lower id.
	if !s.Kill(min(ids[0], ids[1])) {
		t.Fatal("kill")
	}
	if p := <-done; p[0][0] != wire.HeaderOK {
		t.Fatalf("waiter after the kill: %x", p[0])
	}
	rows, err := s.Exec("SELECT v FROM app.t WHERE k = 1")
	if err != nil || *rows[0][0] != "2" {
		t.Fatalf("v after the killed update rolled back and the waiter's ran: %v %v", rows, err)
	}
}
