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
	// On the read/write-split port a third of the ops only read, so
	// replicas serve a fair share.
	readOnly := a.o.RWSplit && rng.IntN(3) == 0
	for i := 0; i < n; i++ {
		k := rng.Int64N(int64(a.o.Keys))
		if readOnly || rng.IntN(2) == 0 {
			op.Txn = append(op.Txn, history.Micro{F: history.MRead, Key: k})
		} else {
			op.Txn = append(op.Txn, history.Micro{F: history.MAppend, Key: k, Value: a.next.Add(1)})
		}
	}
	return op
}

func (a *appendW) Execute(ctx context.Context, db *sql.DB, op *history.Op) {
	if a.o.RWSplit && !op.Final && readOnly(op) {
		replicaRead(ctx, db, op)
		return
	}
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

func readOnly(op *history.Op) bool {
	for _, m := range op.Txn {
		if m.F != history.MRead {
			return false
		}
	}
	return true
}

// replicaRead runs a read-only op as ONE autocommit SELECT, which the
// read/write-split port may send to a replica: one statement is one
// snapshot of whatever prefix of the log that replica has applied.
func replicaRead(ctx context.Context, db *sql.DB, op *history.Op) {
	op.Note = checker.ReplicaRead
	// Keys inline (integers), not placeholders: a text COM_QUERY is what
	// the proxy's read/write split routes to replicas.
	keys := make([]string, len(op.Txn))
	for i, m := range op.Txn {
		keys[i] = strconv.FormatInt(m.Key, 10)
	}
	q := "SELECT k, v FROM lists WHERE k IN (" + strings.Join(keys, ", ") + ")"
	lists, err := func() (map[int64][]int64, error) {
		rows, err := db.QueryContext(ctx, q)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		out := map[int64][]int64{}
		for rows.Next() {
			var k int64
			var s string
			if err := rows.Scan(&k, &s); err != nil {
				return nil, err
			}
			if out[k], err = parseList(s); err != nil {
				return nil, err
			}
		}
		return out, rows.Err()
	}()
	op.Outcome, op.Error = readOutcome(err), errString(err)
	if err != nil {
		return
	}
	for i := range op.Txn {
		l := lists[op.Txn[i].Key]
		if l == nil {
			l = []int64{}
		}
		op.Txn[i].List = l
	}
}
