package sqlproxy

import (
	"context"
	"crypto/sha1"
	"crypto/tls"
	"database/sql"
	"fmt"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"phxgo/binlogd/mtls/mtlstest"
	"phxgo/binlogd/mysqld"
	"phxgo/sqlproxy/topology"
	"phxgo/sqlproxy/wire"
)

// TestLocalInfile: LOAD DATA LOCAL INFILE through the proxy against real
// MariaDB (local_infile=ON, the phxgo default). The client's file
// streams through the proxy (0xFB request, file packets, empty packet)
// on every path a client meets: the linearizable port in plain and in
// TLS, the read/write-split port (LOAD is a write: it must reach the
// master, a read_only replica would refuse it), and a replica's proxy
// forwarding over the TLS hop. After each load the same connection goes
// on working, and the rows are there exactly once.
func TestLocalInfile(t *testing.T) {
	inst := startInstances(t, 2)
	master, replica := inst[0], inst[1]
	replicate(t, master, replica)
	root, err := master.DB("")
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	for _, q := range []string{"CREATE DATABASE test",
		"CREATE TABLE test.li (id INT AUTO_INCREMENT PRIMARY KEY, path VARCHAR(16) NOT NULL, seq INT NOT NULL, pad VARCHAR(200) NOT NULL)"} {
		mustExec(t, root, q)
	}
	ca := mtlstest.MakeCA(t, 2)
	authAddrs := []string{master.Addr()}
	pa := startProxy(t, 1, masterView(master, replica), Linearizable, authAddrs, func(c *Config) {
		c.PeerTLS = loadMaterial(t, proxyFiles(ca, 1))
	})
	prw := startProxy(t, 1, masterView(master, replica), RWSplit, authAddrs, nil)
	hopView := topology.View{MasterID: 1, MasterProxyAddr: pa.addr, MasterMySQLAddr: master.Addr(), SelfMySQLAddr: replica.Addr()}
	phop := startProxy(t, 2, hopView, Linearizable, authAddrs, func(c *Config) { c.PeerTLS = loadMaterial(t, proxyFiles(ca, 2)) })

	const rows = 20000 // ~4 MiB: hundreds of the driver's 16 KiB packets, more than the proxy's buffers
	paths := []struct {
		name, addr string
		tweak      func(*mysql.Config)
	}{
		{"plain", pa.addr, nil},
		{"tls", pa.addr, func(c *mysql.Config) { c.TLS = &tls.Config{InsecureSkipVerify: true} }},
		{"rwsplit", prw.addr, nil},
		{"tls_hop", phop.addr, nil},
	}
	for _, p := range paths {
		t.Run(p.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			acc := mysqld.DefaultAccounts()
			db := clientDB(t, p.addr, acc.AppUser, acc.AppPassword, "test", func(c *mysql.Config) {
				if p.tweak != nil {
					p.tweak(c)
				}
			})
			conn, err := db.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			name := "li-" + p.name
			mysql.RegisterReaderHandler(name, func() io.Reader { return rowsReader(p.name, rows) })
			defer mysql.DeregisterReaderHandler(name)
			res, err := conn.ExecContext(ctx, "LOAD DATA LOCAL INFILE 'Reader::"+name+"' INTO TABLE li FIELDS TERMINATED BY ',' (path, seq, pad)")
			if err != nil {
				t.Fatalf("LOAD DATA LOCAL via %s: %v", p.name, err)
			}
			if n, _ := res.RowsAffected(); n != rows {
				t.Fatalf("rows affected %d, want %d", n, rows)
			}
			var sid int64
			if err := conn.QueryRowContext(ctx, "SELECT @@server_id").Scan(&sid); err != nil {
				t.Fatalf("the connection after the load: %v", err)
			}
			if p.name != "rwsplit" && sid != 1 {
				t.Fatalf("statement after the load ran on server %d", sid)
			}
			var n, sum int64
			if err := root.QueryRowContext(ctx, "SELECT COUNT(*), COALESCE(SUM(seq), 0) FROM test.li WHERE path = ?", p.name).Scan(&n, &sum); err != nil {
				t.Fatal(err)
			}
			if n != rows || sum != rows*(rows+1)/2 {
				t.Fatalf("%s: %d rows, seq sum %d on the master; want %d, %d", p.name, n, sum, rows, rows*(rows+1)/2)
			}
		})
	}

	// Bad input: a raw client that breaks the exchange. Whatever it does,
	// nothing half-loaded is committed and the proxy serves the next one.
	t.Run("client_stops_mid_file", func(t *testing.T) {
		c := rawLogin(t, pa.addr, wire.ClientLocalFiles)
		askFile(t, c, "stop")
		for i := 1; i <= 100; i++ {
			if err := c.WritePacket([]byte(fmt.Sprintf("stop,%d,x\n", i))); err != nil {
				t.Fatal(err)
			}
		}
		if err := c.W.Flush(); err != nil {
			t.Fatal(err)
		}
		c.Close() // no empty packet: the file never ends
		awaitNoLoad(t, root)
		assertRows(t, root, "stop", 0)
	})
	t.Run("client_stops_inside_a_frame", func(t *testing.T) {
		c := rawLogin(t, pa.addr, wire.ClientLocalFiles)
		seq := askFile(t, c, "cut")
		// A header announcing 1 MiB (more than the proxy's read buffer),
		// then 1 KiB of it, then the connection ends.
		hdr := []byte{0, 0, 0x10, seq}
		if _, err := c.Conn.Write(append(hdr, []byte(strings.Repeat("cut,1,x\n", 128))...)); err != nil {
			t.Fatal(err)
		}
		c.Close()
		awaitNoLoad(t, root)
		assertRows(t, root, "cut", 0)
	})
	t.Run("sequence_out_of_order", func(t *testing.T) {
		c := rawLogin(t, pa.addr, wire.ClientLocalFiles)
		askFile(t, c, "seq")
		c.Seq += 5 // the server checks packet order; the proxy relays ids as sent
		_ = c.WritePacket([]byte("seq,1,x\n"))
		_ = c.WritePacket(nil)
		if err := c.W.Flush(); err != nil {
			t.Fatal(err)
		}
		// The server answers with an error (or the proxy closes the client):
		// never an OK, never a hang.
		_ = c.SetReadDeadline(time.Now().Add(time.Minute))
		if p, err := c.ReadPacket(); err == nil {
			if len(p) == 0 || p[0] != wire.HeaderErr {
				t.Fatalf("out-of-order file packets answered with %x", p[:min(len(p), 16)])
			}
			t.Logf("out-of-order file: %v", wire.ParseError(p))
		}
		c.Close()
		awaitNoLoad(t, root)
		assertRows(t, root, "seq", 0)
	})
	t.Run("garbage_file", func(t *testing.T) {
		// Bytes that are no rows at all: to the server they are file data
		// like any other; the statement ends (loaded with warnings or
		// refused) and the connection stays in step.
		c := rawLogin(t, pa.addr, wire.ClientLocalFiles)
		askFile(t, c, "garbage")
		g := make([]byte, 100<<10)
		for i := range g {
			g[i] = byte(i*7919 + i>>8)
		}
		_ = c.WritePacket(g)
		_ = c.WritePacket(nil)
		if err := c.W.Flush(); err != nil {
			t.Fatal(err)
		}
		readResult(t, c, "garbage file")
		selectOne(t, c)
		c.Close()
	})
	t.Run("max_payload_packet", func(t *testing.T) {
		// A file packet of exactly 16 MiB-1 bytes travels as a full frame
		// and an empty continuation frame: that empty frame is not the end
		// of the file, the next data packet and the empty packet are.
		c := rawLogin(t, pa.addr, wire.ClientLocalFiles)
		askFile(t, c, "max")
		line := "max,1," + strings.Repeat("m", 100) + "\n"
		k := (wire.MaxPayload - 50) / len(line)
		last := wire.MaxPayload - k*len(line) // 50..156 bytes: one more line of that length
		big := []byte(strings.Repeat(line, k) + "max,1," + strings.Repeat("m", last-7) + "\n")
		if len(big) != wire.MaxPayload {
			t.Fatalf("built %d bytes", len(big))
		}
		_ = c.WritePacket(big) // a MaxPayload frame and an empty one
		_ = c.WritePacket([]byte("max,2,tail\n"))
		_ = c.WritePacket(nil)
		if err := c.W.Flush(); err != nil {
			t.Fatal(err)
		}
		readResult(t, c, "16 MiB packet")
		selectOne(t, c)
		c.Close()
		var n int
		if err := root.QueryRow("SELECT COUNT(*) FROM test.li WHERE path = 'max' AND seq = 2").Scan(&n); err != nil || n != 1 {
			t.Fatalf("the data after the 16 MiB packet: %d rows, %v", n, err)
		}
	})
	t.Run("client_without_local_files", func(t *testing.T) {
		// A client that did not offer CLIENT_LOCAL_FILES gets a backend
		// connection without it: the server refuses, nothing is asked.
		c := rawLogin(t, pa.addr, 0)
		c.Seq = 0
		if err := c.WriteFlush(append([]byte{wire.ComQuery}, loadStmt("nolocal")...)); err != nil {
			t.Fatal(err)
		}
		p, err := c.ReadPacket()
		if err != nil {
			t.Fatal(err)
		}
		if len(p) == 0 || p[0] != wire.HeaderErr {
			t.Fatalf("LOAD DATA LOCAL without CLIENT_LOCAL_FILES answered %x", p[:min(len(p), 16)])
		}
		t.Logf("without CLIENT_LOCAL_FILES: %v", wire.ParseError(p))
		selectOne(t, c)
		c.Close()
	})
	// The proxy still serves after all that.
	if id := serverID(t, appDB(t, pa.addr, "", false), "SELECT @@server_id"); id != 1 {
		t.Fatal(id)
	}
}

// rowsReader yields n CSV lines "path,seq,pad" for test.li.
func rowsReader(path string, n int) io.Reader {
	var i atomic.Int64
	pad := strings.Repeat("p", 180)
	return readerFunc(func(b []byte) (int, error) {
		w := 0
		for {
			k := i.Load()
			if k >= int64(n) {
				if w == 0 {
					return 0, io.EOF
				}
				return w, nil
			}
			line := fmt.Sprintf("%s,%d,%s\n", path, k+1, pad)
			if w+len(line) > len(b) {
				return w, nil
			}
			w += copy(b[w:], line)
			i.Add(1)
		}
	})
}

type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(b []byte) (int, error) { return f(b) }

func loadStmt(path string) string {
	return "LOAD DATA LOCAL INFILE '" + path + ".csv' INTO TABLE test.li FIELDS TERMINATED BY ',' (path, seq, pad)"
}

// rawLogin logs in as the app user with the given capabilities on top of
// what any 4.1 client sends, speaking the protocol by hand.
func rawLogin(t *testing.T, addr string, caps uint32) *wire.Conn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	_ = nc.SetDeadline(time.Now().Add(2 * time.Minute))
	c := wire.NewConn(nc)
	p, err := c.ReadPacket()
	if err != nil {
		t.Fatal(err)
	}
	g, err := wire.ParseGreeting(p)
	if err != nil {
		t.Fatal(err)
	}
	acc := mysqld.DefaultAccounts()
	st1 := sha1.Sum([]byte(acc.AppPassword))
	r := &wire.Response{Caps: caps | wire.ClientProtocol41 | wire.ClientSecureConn | wire.ClientPluginAuth | wire.ClientLongPassword | wire.ClientTransactions,
		MaxPacket: 1 << 30, Charset: 45, User: acc.AppUser, Auth: wire.ScrambleFromStage1(g.Salt, st1[:]), Plugin: wire.NativePlugin}
	if err := c.WriteFlush(r.Encode()); err != nil {
		t.Fatal(err)
	}
	if p, err = c.ReadPacket(); err != nil || len(p) == 0 || p[0] != wire.HeaderOK {
		t.Fatalf("login: %x %v", p, err)
	}
	return c
}

// askFile sends LOAD DATA LOCAL for path and reads the server's request
// for the file; it returns the sequence id the first file packet takes.
func askFile(t *testing.T, c *wire.Conn, path string) uint8 {
	t.Helper()
	c.Seq = 0
	if err := c.WriteFlush(append([]byte{wire.ComQuery}, loadStmt(path)...)); err != nil {
		t.Fatal(err)
	}
	p, err := c.ReadPacket()
	if err != nil {
		t.Fatal(err)
	}
	if len(p) == 0 || p[0] != wire.HeaderLocal || string(p[1:]) != path+".csv" {
		t.Fatalf("want a LOCAL INFILE request for %s.csv, got %q", path, p)
	}
	return c.Seq
}

// readResult reads the OK or ERR that ends a statement.
func readResult(t *testing.T, c *wire.Conn, what string) {
	t.Helper()
	p, err := c.ReadPacket()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	switch {
	case len(p) > 0 && p[0] == wire.HeaderOK:
	case len(p) > 0 && p[0] == wire.HeaderErr:
		t.Logf("%s: %v", what, wire.ParseError(p))
	default:
		t.Fatalf("%s: answered %x", what, p[:min(len(p), 16)])
	}
}

// selectOne checks the connection is still in step: SELECT 1 gets its
// one-row result.
func selectOne(t *testing.T, c *wire.Conn) {
	t.Helper()
	c.Seq = 0
	if err := c.WriteFlush(append([]byte{wire.ComQuery}, "SELECT 1"...)); err != nil {
		t.Fatal(err)
	}
	var got [][]byte
	for eofs := 0; eofs < 2; {
		p, err := c.ReadPacket()
		if err != nil {
			t.Fatalf("SELECT 1 after the load: %v (read %q)", err, got)
		}
		if len(p) > 0 && p[0] == wire.HeaderErr {
			t.Fatalf("SELECT 1 after the load: %v", wire.ParseError(p))
		}
		if len(p) > 0 && p[0] == wire.HeaderEOF && len(p) < 9 {
			eofs++
		}
		got = append(got, p)
	}
	// column count, column, EOF, the row, EOF
	if len(got) != 5 || string(got[3]) != "\x011" {
		t.Fatalf("SELECT 1 after the load read %q", got)
	}
}

// awaitNoLoad waits until the master runs no LOAD DATA: a load whose
// client went away has been rolled back by then.
func awaitNoLoad(t *testing.T, root *sql.DB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	await(t, ctx, "no LOAD DATA running", func() bool {
		var n int
		err := root.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE 'LOAD DATA%'").Scan(&n)
		return err == nil && n == 0
	})
}

func assertRows(t *testing.T, root *sql.DB, path string, want int) {
	t.Helper()
	var n int
	if err := root.QueryRow("SELECT COUNT(*) FROM test.li WHERE path = ?", path).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != want {
		t.Fatalf("%s: %d rows committed, want %d", path, n, want)
	}
}
