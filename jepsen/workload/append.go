package workload

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync/atomic"

	"phxgo/jepsen/checker"
	"phxgo/jepsen/history"
)

// appendW: lists(k, v TEXT) where v is a comma-separated list; an append
// is INSERT ... ON DUPLICATE KEY UPDATE v = CONCAT(v, ',', x).
type appendW struct {
	o    Options
	next atomic.Int64 // element values, unique across keys
}

func newAppend(o Options) *appendW { return &appendW{o: o} }

func (*appendW) Name() string { return "append" }

func (*appendW) Setup(ctx context.Context, db *sql.DB) error {
	return createDB(ctx, db,
		"CREATE TABLE IF NOT EXISTS lists (k BIGINT PRIMARY KEY, v MEDIUMTEXT NOT NULL) ENGINE=InnoDB")
}

func (a *appendW) Generate(rng *rand.Rand) history.Op {
	n := 1 + rng.IntN(4)
	op := history.Op{F: history.FTxn}
	for i := 0; i < n; i++ {
		k := rng.Int64N(int64(a.o.Keys))
		if rng.IntN(2) == 0 {
			op.Txn = append(op.Txn, history.Micro{F: history.MRead, Key: k})
		} else {
			op.Txn = append(op.Txn, history.Micro{F: history.MAppend, Key: k, Value: a.next.Add(1)})
		}
	}
	return op
}

func (*appendW) Execute(ctx context.Context, db *sql.DB, op *history.Op) {
	txn(ctx, db, &sql.TxOptions{Isolation: sql.LevelSerializable}, op, func(tx *sql.Tx) error {
		for i := range op.Txn {
			m := &op.Txn[i]
			switch m.F {
			case history.MAppend:
				if _, err := tx.ExecContext(ctx,
					"INSERT INTO lists (k, v) VALUES (?, ?) ON DUPLICATE KEY UPDATE v = CONCAT(v, ',', VALUES(v))",
					m.Key, strconv.FormatInt(m.Value, 10)); err != nil {
					return err
				}
			case history.MRead:
				var s string
				err := tx.QueryRowContext(ctx, "SELECT v FROM lists WHERE k = ?", m.Key).Scan(&s)
				if err != nil && !errors.Is(err, sql.ErrNoRows) {
					return err
				}
				l, perr := parseList(s)
				if perr != nil {
					return perr
				}
				m.List = l
			}
		}
		return nil
	})
	if op.Outcome != history.OK {
		for i := range op.Txn {
			op.Txn[i].List = nil // reads of a transaction that did not commit say nothing
		}
	}
}

func parseList(s string) ([]int64, error) {
	out := []int64{}
	if s == "" {
		return out, nil
	}
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("list element %q: %w", f, err)
		}
		out = append(out, v)
	}
	return out, nil
}

func (a *appendW) Finals() []history.Op {
	op := history.Op{F: history.FTxn, Final: true}
	for k := 0; k < a.o.Keys; k++ {
		op.Txn = append(op.Txn, history.Micro{F: history.MRead, Key: int64(k)})
	}
	return []history.Op{op}
}

func (*appendW) Check(h []history.Op, _ string) []checker.Result {
	return []checker.Result{checker.Append(h)}
}
