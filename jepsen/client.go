package jepsen

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"net"
	"time"

	"github.com/go-sql-driver/mysql"

	"phxgo/jepsen/history"
	"phxgo/jepsen/netns"
	"phxgo/jepsen/workload"
)

// dialNet is the go-sql-driver network name whose dialer runs inside the
// namespace (registered per run; one run per process at a time).
const dialNet = "phxjepsen"

func registerDialer(ns *netns.NS) {
	mysql.RegisterDialContext(dialNet, func(ctx context.Context, addr string) (net.Conn, error) {
		return ns.DialContext(ctx, "tcp", addr)
	})
}

// openDB opens a one-connection pool to node's proxy, via the namespace.
func openDB(n Node, opTimeout time.Duration) (*sql.DB, error) {
	cfg := mysql.NewConfig()
	cfg.User, cfg.Passwd = n.User, n.Password
	cfg.Net, cfg.Addr, cfg.DBName = dialNet, n.ProxyAddr, workload.Schema
	cfg.Timeout = 2 * time.Second
	cfg.ReadTimeout = opTimeout + time.Second
	cfg.WriteTimeout = opTimeout + time.Second
	cfg.ClientFoundRows = true // CAS: affected rows = matched rows
	db, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", n.ProxyAddr, err)
	}
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	return db, nil
}

// client is one Jepsen process: it invokes one operation at a time.
type client struct {
	id       int // process; bumped by concurrency after an info op (Jepsen)
	stride   int
	node     Node
	db       *sql.DB
	rng      *rand.Rand
	w        workload.Workload
	rec      *history.Recorder
	interval time.Duration // mean time between ops (from -rate)
	timeout  time.Duration
}

// run invokes operations until ctx ends.
func (c *client) run(ctx context.Context) {
	for ctx.Err() == nil {
		op := c.w.Generate(c.rng)
		c.do(ctx, op)
		if c.interval > 0 {
			d := time.Duration(c.rng.Int64N(int64(2*c.interval) + 1))
			t := time.NewTimer(d)
			select {
			case <-ctx.Done():
			case <-t.C:
			}
			t.Stop()
		}
	}
}

// do executes one op (with its own timeout, not cut short by the end of
// the run) and records it.
func (c *client) do(ctx context.Context, op history.Op) history.Op {
	op.Process = c.id
	octx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.timeout)
	op.Invoke = c.rec.Now()
	c.w.Execute(octx, c.db, &op)
	op.Complete = c.rec.Now()
	cancel()
	op = c.rec.Add(op)
	if op.Outcome == history.Info {
		// The old process may still have the op in flight: continue as a
		// new process on a fresh connection.
		c.id += c.stride
		c.db.Close()
		if db, err := openDB(c.node, c.timeout); err == nil {
			c.db = db
		}
	}
	return op
}
