package sqlproxy

import (
	"context"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"phxgo/binlogd/mysqld"
)

// TestLocalInfileStall: a LOAD DATA LOCAL whose first row waits for a
// row lock well past PeerTimeout, through a replica's proxy and the TLS
// hop to the master's proxy, loads the whole file once the lock is
// freed. The file is larger than every buffer on the way, so while the
// row waits each proxy's write to its backend meets a zero window; with
// TCP_USER_TIMEOUT armed the kernel aborted that connection after
// PeerTimeout and the client got "connection reset by peer" (Jepsen
// big, issue 20.4: a second 2 GiB load behind the first's AUTO-INC lock).
func TestLocalInfileStall(t *testing.T) {
	const peer = time.Second
	phop, root := hopToMaster(t, peer)
	for _, q := range []string{"CREATE DATABASE test",
		"CREATE TABLE test.stall (k INT PRIMARY KEY, pad VARCHAR(200) NOT NULL)"} {
		mustExec(t, root, q)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// The holder's uncommitted row k=1 makes the load's first row wait
	// (duplicate check) for as long as the holder stays open.
	holder, err := root.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback()
	if _, err := holder.ExecContext(ctx, "INSERT INTO test.stall VALUES (1, 'hold')"); err != nil {
		t.Fatal(err)
	}

	const rows = 300000 // ~60 MiB: more than the sockets and buffers on the way hold
	var sent atomic.Int64
	acc := mysqld.DefaultAccounts()
	db := clientDB(t, phop.addr, acc.AppUser, acc.AppPassword, "test", func(*mysql.Config) {})
	mysql.RegisterReaderHandler("stall", func() io.Reader { return countReader{stallRows(rows), &sent} })
	defer mysql.DeregisterReaderHandler("stall")
	type answer struct {
		n   int64
		err error
	}
	done := make(chan answer, 1)
	go func() {
		res, err := db.ExecContext(ctx, "LOAD DATA LOCAL INFILE 'Reader::stall' INTO TABLE stall FIELDS TERMINATED BY ',' (k, pad)")
		a := answer{err: err}
		if err == nil {
			a.n, _ = res.RowsAffected()
		}
		done <- a
	}()

	// Wait until the load's row has waited for 4 × PeerTimeout (or the
	// load ended: then it was cut, which is the bug).
	var early *answer
	await(t, ctx, "the load waiting for the row lock 4 × PeerTimeout", func() bool {
		select {
		case a := <-done:
			early = &a
			return true
		default:
		}
		// Its first row waits from the start: the statement's age is
		// the lock wait (INNODB_TRX, polled, did not show it reliably).
		var waited int64
		err := root.QueryRowContext(ctx, `SELECT COALESCE(MAX(TIME), -1) FROM information_schema.PROCESSLIST
			WHERE INFO LIKE 'LOAD DATA%'`).Scan(&waited)
		return err == nil && waited >= int64(4*peer/time.Second)
	})
	if early != nil {
		t.Fatalf("the load ended while its row waited for the lock: %d rows, %v", early.n, early.err)
	}
	total := stallBytes(rows)
	if s := sent.Load(); s >= total {
		t.Fatalf("the client sent the whole file (%d bytes) while the server waited: nothing stalled on the way", s)
	} else {
		t.Logf("the client is held at %d of %d bytes while the server waits", s, total)
	}
	if err := holder.Rollback(); err != nil {
		t.Fatal(err)
	}
	a := <-done
	if a.err != nil || a.n != rows {
		t.Fatalf("the load after the lock was freed: %d rows, %v; want %d rows", a.n, a.err, rows)
	}
	var n int64
	if err := root.QueryRowContext(ctx, "SELECT COUNT(*) FROM test.stall").Scan(&n); err != nil || n != rows {
		t.Fatalf("%d rows committed (%v), want %d", n, err, rows)
	}
}

// stallRows yields lines "k,pad" for k = 1..n (the pad: 180 bytes).
func stallRows(n int) io.Reader {
	k := 0
	var line []byte
	return readerFunc(func(b []byte) (int, error) {
		w := 0
		for w < len(b) {
			if len(line) == 0 {
				if k == n {
					break
				}
				k++
				line = stallLine(k)
			}
			c := copy(b[w:], line)
			line, w = line[c:], w+c
		}
		if w == 0 {
			return 0, io.EOF
		}
		return w, nil
	})
}

func stallLine(k int) []byte {
	b := []byte(itoa(k) + ",")
	for range 180 {
		b = append(b, 's')
	}
	return append(b, '\n')
}

func stallBytes(n int) int64 {
	var s int64
	for k := 1; k <= n; k++ {
		s += int64(len(itoa(k))) + 182
	}
	return s
}

func itoa(k int) string { return string(appendInt(nil, k)) }

func appendInt(b []byte, k int) []byte {
	if k >= 10 {
		b = appendInt(b, k/10)
	}
	return append(b, byte('0'+k%10))
}

// countReader counts the bytes the driver took from r.
type countReader struct {
	r io.Reader
	n *atomic.Int64
}

func (c countReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.n.Add(int64(n))
	return n, err
}
