package replserver

import (
	"context"
	"database/sql"
	"io"
	"net"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

// A login that began before a crowd of silent strangers keeps its slot:
// strangers before login have DefaultMaxPending slots of their own, so
// 100 of them (more than DefaultMaxConns, the cap they shared with
// logins before) do not evict it. Audit: 4,000 silent connections a
// second kept every replica from logging in.
func TestLoginSurvivesSilentCrowd(t *testing.T) {
	s := startEndpoint(t, NewMemorySource(0), "127.0.0.1:0", time.Second)
	const crowd = DefaultMaxConns + 36
	c := mysql.NewConfig()
	c.User, c.Passwd, c.Net, c.Addr, c.Timeout = testUser, testPassword, "tcp", s.Addr(), 5*time.Second
	c.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		var d net.Dialer
		conn, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		// The login's connection is accepted first; now the crowd
		// arrives, each accepted (its greeting read) before the login
		// goes on.
		for range crowd {
			sc, err := net.DialTimeout("tcp", addr, 5*time.Second)
			if err != nil {
				t.Error(err)
				break
			}
			t.Cleanup(func() { sc.Close() })
			_ = sc.SetReadDeadline(time.Now().Add(5 * time.Second))
			hdr := make([]byte, 4)
			if _, err := io.ReadFull(sc, hdr); err != nil {
				t.Errorf("a stranger got no greeting: %v", err)
				break
			}
		}
		return conn, nil
	}
	conn, err := mysql.NewConnector(c)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(conn)
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := db.PingContext(ctx); err != nil {
		t.Fatalf("login after %d silent strangers arrived: %v", crowd, err)
	}
}
