package replserver

import (
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/client"
	gomysql "github.com/go-mysql-org/go-mysql/mysql"

	"phxgo/internal/testkit"
)

// TestCommandFramesLimit: the framing check passes packets up to
// maxCommandPacket however the stream is cut, and stops at the first
// header over it.
func TestCommandFramesLimit(t *testing.T) {
	ok := append(packetOf(0, make([]byte, maxCommandPacket)), packetOf(0, []byte{comPing})...)
	for _, chunk := range []int{1, 3, 4, 5, 4096, len(ok)} {
		var f commandFrames
		for i := 0; i < len(ok); i += chunk {
			if err := f.check(ok[i:min(i+chunk, len(ok))]); err != nil {
				t.Fatalf("chunk %d: %v on packets within the limit", chunk, err)
			}
		}
	}
	bad := append(packetOf(0, []byte{comPing}), 0xff, 0xff, 0xff, 0)
	for _, chunk := range []int{1, 2, 6, len(bad)} {
		var f commandFrames
		var err error
		for i := 0; i < len(bad) && err == nil; i += chunk {
			err = f.check(bad[i:min(i+chunk, len(bad))])
		}
		var big errCommandTooBig
		if !errors.As(err, &big) || big.announced != 1<<24-1 || f.over != 1<<24-1 {
			t.Fatalf("chunk %d: %v (over %d), want errCommandTooBig for 16 MiB - 1", chunk, err, f.over)
		}
	}
}

// connectOutside logs in to s as the outside account over TLS (tc) with
// go-mysql's client.
func connectOutside(s *Server, tc *tls.Config) (*client.Conn, error) {
	return client.Connect(s.Addr(), outsideUser, outsidePassword, "", func(c *client.Conn) error {
		c.SetTLSConfig(tc)
		return nil
	})
}

// TestOversizedCommandAfterLogin is the red-team attack of session 37: a
// logged-in outside replica announces a 16 MiB command (and would follow
// it with continuation packets). The endpoint answers 1153 at the header
// and closes the connection, holding none of it.
func TestOversizedCommandAfterLogin(t *testing.T) {
	s, tc := outsideEndpoint(t, NewMemorySource(0))
	c, err := connectOutside(s, tc)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	raw := c.Conn.Conn // the TLS session
	_ = raw.SetDeadline(time.Now().Add(handshakeTimeout / 2))
	if _, err := raw.Write(append([]byte{0xff, 0xff, 0xff, 0, comQuery}, "SELECT "...)); err != nil {
		t.Fatal(err)
	}
	c.ResetSequence()
	c.Sequence = 1
	pkt, err := c.ReadPacket()
	if err != nil {
		t.Fatalf("no answer to a 16 MiB header: %v", err)
	}
	if pkt[0] != gomysql.ERR_HEADER || int(pkt[1])|int(pkt[2])<<8 != gomysql.ER_NET_PACKET_TOO_LARGE {
		t.Fatalf("answer %q, want ERR 1153", pkt)
	}
	if _, err := raw.Read(make([]byte, 1)); err == nil {
		t.Fatal("the connection stayed open after the oversized command")
	} else if ne := net.Error(nil); errors.As(err, &ne) && ne.Timeout() {
		t.Fatal("the connection was still open: the endpoint waited for the 16 MiB")
	} else if !errors.Is(err, io.EOF) && !strings.Contains(err.Error(), "reset") && !strings.Contains(err.Error(), "closed") {
		t.Logf("read after refusal: %v", err)
	}

	// A replica's commands still work on a new connection.
	c2, err := connectOutside(s, tc)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if _, err := c2.Execute("SET @slave_connect_state='0-1-5'"); err != nil {
		t.Fatalf("a replica's SET after the refusal: %v", err)
	}
}

// TestUserVariablesBounded: a connection keeps at most maxUserVars user
// variables of maxVarBytes in all; a refused one is not stored, and
// assigning an existing variable again is always counted by its new size.
func TestUserVariablesBounded(t *testing.T) {
	s := newSession(nil, time.Now)
	for i := range maxUserVars {
		if r, _ := s.answer("SET @v" + strings.Repeat("x", i%3) + string(rune('a'+i%26)) + string(rune('a'+i/26)) + "='1'"); r.err != nil {
			t.Fatalf("variable %d refused: %v", i, r.err)
		}
	}
	r, _ := s.answer("SET @one_too_many='1'")
	if r.err == nil || r.err.Code != erOutOfResources {
		t.Fatalf("variable %d: %v, want error %d", maxUserVars+1, r.err, erOutOfResources)
	}
	if _, ok := s.userVar("one_too_many"); ok {
		t.Fatal("the refused variable was stored")
	}
	// Assigning an existing one again is fine, within the byte bound.
	if r, _ := s.answer("SET @vaa='" + strings.Repeat("z", 1000) + "'"); r.err != nil {
		t.Fatalf("re-assigning @vaa: %v", r.err)
	}
	if r, _ := s.answer("SET @vaa='" + strings.Repeat("z", maxVarBytes) + "'"); r.err == nil || r.err.Code != erOutOfResources {
		t.Fatalf("a %d-byte value: %v, want error %d", maxVarBytes, r.err, erOutOfResources)
	}
	if v, _ := s.userVar("vaa"); len(v) != 1000 {
		t.Fatalf("@vaa is %d bytes after a refused assignment, want its old 1000", len(v))
	}
}

// TestOutsideRefusalsLogBounded: an outside replica looping over a
// refused query writes one log line per handshakeLogEvery, not one per
// query (19 MB of log a second in the red-team test of session 37); every
// refusal is still counted.
func TestOutsideRefusalsLogBounded(t *testing.T) {
	var logs testkit.LogBuffer
	s, tc := outsideEndpointLogging(t, NewMemorySource(0), slog.New(slog.NewTextHandler(&logs, nil)))
	db := openAs(t, s.Addr(), outsideUser, outsidePassword, tc)
	db.SetMaxOpenConns(1)
	const tries = 50
	for range tries {
		_, err := db.Exec("SELECT 1")
		mysqlErr(t, err, erSpecificAccessDenied, "may only replicate")
	}
	if st := s.Stats(); st.Denied != tries {
		t.Fatalf("Denied = %d, want %d", st.Denied, tries)
	}
	out := logs.String()
	if n := strings.Count(out, "outside account refused"); n != 1 {
		t.Fatalf("%d log lines for %d refusals, want 1:\n%.3000s", n, tries, out)
	}
}

// TestOutsideConnectionsCapped is the third red-team pass of session 37:
// 70 outside dumps took every logged-in slot of the endpoint, and the
// node's own MariaDB could not reconnect (1040). Outside replicas now
// hold at most MaxConns less nodeReserve; the one past that gets 1040 in
// answer to its first command, and the node's account still gets in.
func TestOutsideConnectionsCapped(t *testing.T) {
	s, tc := outsideEndpointWith(t, NewMemorySource(0), func(c *Config) { c.MaxConns = nodeReserve + 2 })
	login := func() (*client.Conn, error) { return connectOutside(s, tc) }
	var held []*client.Conn
	for i := range 2 {
		c, err := login()
		if err != nil {
			t.Fatalf("outside connection %d: %v", i, err)
		}
		if _, err := c.Execute("SELECT @@GLOBAL.gtid_domain_id"); err != nil {
			t.Fatalf("outside connection %d: %v", i, err)
		}
		held = append(held, c)
	}
	extra, err := login()
	if err == nil {
		_, err = extra.Execute("SELECT @@GLOBAL.gtid_domain_id")
		extra.Close()
	}
	var me *gomysql.MyError
	if !errors.As(err, &me) || me.Code != gomysql.ER_CON_COUNT_ERROR {
		t.Fatalf("a third outside connection of 2 allowed: %v, want 1040", err)
	}
	for i := range nodeReserve {
		db := openAs(t, s.Addr(), testUser, testPassword, nil)
		db.SetMaxOpenConns(1)
		var one string
		if err := db.QueryRow("SELECT 1").Scan(&one); err != nil {
			t.Fatalf("the node's account, connection %d, with outside replicas at their cap: %v", i, err)
		}
		defer db.Close()
		db.SetMaxIdleConns(1)
	}
	held[0].Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, err := login()
		if err == nil {
			if _, err = c.Execute("SELECT @@GLOBAL.gtid_domain_id"); err == nil {
				c.Close()
				break
			}
			c.Close()
		}
		if time.Now().After(deadline) {
			t.Fatalf("an outside connection after one closed: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestSelectBounded is the third red-team pass of session 37: SELECT
// @a,@a,… of one 64 KB variable, 5,000 times, built a 1 GB row. A SELECT
// now has at most maxSelectExprs expressions and a row of maxVarBytes.
func TestSelectBounded(t *testing.T) {
	s := newSession(nil, time.Now)
	if r, _ := s.answer("SET @a='" + strings.Repeat("x", 40<<10) + "'"); r.err != nil {
		t.Fatal(r.err)
	}
	if r, _ := s.answer("SELECT @a"); r.err != nil || len(r.rows) != 1 {
		t.Fatalf("SELECT @a: %v", r.err)
	}
	if r, _ := s.answer("SELECT @a, @a"); r.err == nil || r.err.Code != erOutOfResources {
		t.Fatalf("an 80 KB row: %v, want error %d", r.err, erOutOfResources)
	}
	if r, _ := s.answer("SELECT 1" + strings.Repeat(", 1", maxSelectExprs)); r.err == nil || r.err.Code != erOutOfResources {
		t.Fatalf("%d expressions: %v, want error %d", maxSelectExprs+1, r.err, erOutOfResources)
	}
	if r, _ := s.answer("SELECT 1" + strings.Repeat(", 1", maxSelectExprs-1)); r.err != nil {
		t.Fatalf("%d expressions: %v", maxSelectExprs, r.err)
	}
}
