package capture

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	gomysql "github.com/go-sql-driver/mysql"

	"phxgo/binlogd/binlog"
	"phxgo/binlogd/rawnet"
)

// Sink makes whole transactions durable, in stream order.
type Sink interface {
	// Propose queues txns to be made durable (chosen and valid in the
	// Paxos log) and returns without waiting for the outcome. Capture
	// calls it from one goroutine, in stream order: b.Prev is the last
	// GTID of the previous call's batch, and txns follow it without a
	// gap. A sink that queues in call order (paxos.Node.ProposeAsync)
	// therefore puts the batches in the log in stream order. An error
	// means the batch is not durable: capture stops with ErrRejected.
	//
	// A transaction bigger than Config.FragmentBytes comes as pieces
	// (binlog.Txn More/Offset), each alone in its batch, in order, as
	// its events arrive: the sink makes each piece durable as fragments
	// of that transaction (b.Prev stays the last whole transaction until
	// the last piece). Only the last piece's batch completes it; capture
	// ACKs nothing before that.
	Propose(ctx context.Context, b BatchInfo, txns []binlog.Txn) (Pending, error)
}

// Pending is a batch queued by Sink.Propose.
type Pending interface {
	// Wait returns nil once the batch is durable; an error means it is
	// not (rejected, or the outcome is unknown) and capture stops with
	// ErrRejected. Capture calls Wait once per batch, from one goroutine,
	// in the order the batches were proposed.
	Wait(ctx context.Context) error
}

// BatchInfo places one batch in the stream.
type BatchInfo struct {
	Seq  uint64      // 1, 2, 3... in stream order, over the Capture's life
	Prev binlog.GTID // last GTID of the previous batch (Config.After for the first)
}

// Capture is binlogd's master-side capture (see the package doc).
type Capture struct {
	cfg   Config
	sink  Sink
	log   *slog.Logger
	stats statsBox

	// Owned by Run's goroutine.
	durable    binlog.GTID // Invariant: every txn up to durable is durable in the sink.
	durablePos Position    // where the durable transaction ends; "" file before the first
	dispatched binlog.GTID // last GTID handed to the sink whole (or its last piece); durable <= dispatched
	// durableCommit: the group commit of the last durable transaction
	// (unit.commitID). A session resumes right after it, so a group the
	// reconnect cut is not taken for a new one (pipeline.holding).
	durableCommit uint64
	// open: a split transaction with pieces handed to the sink and its
	// end still to come. partial: how much of it is durable; a reconnect
	// resumes it there (the grouper skips and checks those bytes).
	open     openTxn
	partial  resumePoint
	batchSeq uint64
	sessions int
}

// New validates cfg; call Run to start.
func New(cfg Config, sink Sink) (*Capture, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if sink == nil {
		return nil, fmt.Errorf("%w: nil Sink", ErrBadConfig)
	}
	c := &Capture{cfg: cfg, sink: sink, log: cfg.logger(), durable: cfg.After, dispatched: cfg.After}
	c.stats.s.Durable = cfg.After
	return c, nil
}

// Run is New followed by (*Capture).Run.
func Run(ctx context.Context, cfg Config, sink Sink) error {
	c, err := New(cfg, sink)
	if err != nil {
		return err
	}
	return c.Run(ctx)
}

// Stats returns a snapshot of the counters; safe to call any time.
func (c *Capture) Stats() Stats { return c.stats.get() }

// Run checks the server, then streams, batches and ACKs until ctx ends
// (it returns ctx.Err()) or a fatal error: ErrBadSettings, ErrUnsafe,
// ErrRejected (wrapping the sink's error), ErrProtocol, or a MySQL error
// that reconnecting cannot fix (access denied, GTID not in the binlog).
// Connection losses are retried with backoff. Run may be called once.
func (c *Capture) Run(ctx context.Context) error {
	db, err := openDB(c.cfg)
	if err != nil {
		return err
	}
	defer db.Close()
	if err := CheckServer(ctx, db); err != nil {
		return err
	}
	base, err := semiSyncStatus(ctx, db)
	if err != nil {
		return err
	}

	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var unsafeErr error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := c.monitor(rctx, db, base); err != nil {
			unsafeErr = err
			c.log.Error("capture: unsafe master", "err", err)
			cancel()
		}
	}()
	err = c.loop(rctx, db)
	cancel()
	wg.Wait()
	switch {
	case unsafeErr != nil:
		return unsafeErr
	case ctx.Err() != nil:
		return ctx.Err()
	}
	return err
}

func (c *Capture) loop(ctx context.Context, db *sql.DB) error {
	backoff := 50 * time.Millisecond
	for {
		progressed, err := c.session(ctx, db)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if fatal(err) {
			return err
		}
		if progressed {
			backoff = 50 * time.Millisecond
		}
		c.log.Warn("capture: stream lost; reconnecting", "err", err, "after", c.durable.String(), "in", backoff)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, c.cfg.MaxBackoff)
	}
}

// fatal reports whether reconnecting cannot fix err.
func fatal(err error) bool {
	if errors.Is(err, ErrUnsafe) || errors.Is(err, ErrRejected) || errors.Is(err, ErrProtocol) || errors.Is(err, ErrBadSettings) {
		return true
	}
	var me *mysql.MyError
	if errors.As(err, &me) {
		switch me.Code {
		case mysql.ER_ACCESS_DENIED_ERROR, mysql.ER_SPECIFIC_ACCESS_DENIED_ERROR, mysql.ER_DBACCESS_DENIED_ERROR,
			mysql.ER_MASTER_FATAL_ERROR_READING_BINLOG:
			return true
		}
	}
	return false
}

func openDB(cfg Config) (*sql.DB, error) {
	mc := gomysql.NewConfig()
	mc.User, mc.Passwd = cfg.User, cfg.Password
	mc.Net, mc.Addr = "tcp", cfg.Addr
	if strings.Contains(cfg.Addr, "/") {
		mc.Net = "unix"
	}
	mc.Timeout = cfg.ConnectTimeout
	mc.ReadTimeout, mc.WriteTimeout = 2*cfg.ConnectTimeout, 2*cfg.ConnectTimeout
	mc.DialFunc = rawnet.DialContext // the monitor polls 5 times a second: no sysmon wake-up per poll (package rawnet)
	conn, err := gomysql.NewConnector(mc)
	if err != nil {
		return nil, fmt.Errorf("capture: %w", err)
	}
	db := sql.OpenDB(conn)
	db.SetMaxOpenConns(2)
	db.SetMaxIdleConns(2)
	return db, nil
}

// killZombies ends any dump connection still registered by this account
// and waits until it is gone: a second registration with a live
// server_id froze MariaDB 10.11, and capture's account is the only one
// allowed to replicate from this master.
func (c *Capture) killZombies(ctx context.Context, db *sql.DB) error {
	ctx, cancel := context.WithTimeout(ctx, 2*c.cfg.ConnectTimeout)
	defer cancel()
	for killed := false; ; killed = true {
		ids, err := dumpThreads(ctx, db, c.cfg.User)
		if err != nil || len(ids) == 0 {
			return err
		}
		if !killed {
			c.log.Info("capture: killing stale dump connections", "ids", ids)
			for _, id := range ids {
				_, err := db.ExecContext(ctx, fmt.Sprintf("KILL CONNECTION %d", id))
				var me *gomysql.MySQLError
				if err != nil && !(errors.As(err, &me) && me.Number == mysql.ER_NO_SUCH_THREAD) {
					return fmt.Errorf("capture: kill stale dump connection %d: %w", id, err)
				}
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("capture: stale dump connections %v did not go away: %w", ids, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func dumpThreads(ctx context.Context, db *sql.DB, user string) ([]uint64, error) {
	rows, err := db.QueryContext(ctx, `SELECT ID FROM information_schema.PROCESSLIST
		WHERE USER = ? AND COMMAND LIKE 'Binlog Dump%'`, user)
	if err != nil {
		return nil, fmt.Errorf("capture: list dump connections: %w", err)
	}
	defer rows.Close()
	var ids []uint64
	for rows.Next() {
		var id uint64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}
