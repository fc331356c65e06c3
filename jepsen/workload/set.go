package workload

import (
	"context"
	"database/sql"
	"math/rand/v2"
	"sync/atomic"

	"phxgo/jepsen/checker"
	"phxgo/jepsen/history"
)

// set: set_items(id AUTO_INCREMENT, v) with no unique index on v, so a
// doubly applied insert shows as a duplicate.
type set struct{ next atomic.Int64 }

func (*set) Name() string { return "set" }

func (*set) Setup(ctx context.Context, db *sql.DB) error {
	return createDB(ctx, db,
		"CREATE TABLE IF NOT EXISTS set_items (id BIGINT AUTO_INCREMENT PRIMARY KEY, v BIGINT NOT NULL) ENGINE=InnoDB")
}

func (s *set) Generate(rng *rand.Rand) history.Op {
	if rng.IntN(20) == 0 {
		return history.Op{F: history.FRead}
	}
	return history.Op{F: history.FAdd, Arg: []int64{s.next.Add(1)}}
}

func (*set) Execute(ctx context.Context, db *sql.DB, op *history.Op) {
	switch op.F {
	case history.FAdd:
		_, err := db.ExecContext(ctx, "INSERT INTO set_items (v) VALUES (?)", op.Arg[0])
		op.Outcome, op.Error = stmtOutcome(err), errString(err)
	case history.FRead:
		vals, err := readInts(ctx, db, "SELECT v FROM set_items")
		op.Outcome, op.Error, op.Result = readOutcome(err), errString(err), vals
	}
}

func readInts(ctx context.Context, db *sql.DB, q string) ([]int64, error) {
	rows, err := db.QueryContext(ctx, q)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []int64{}
	for rows.Next() {
		var v int64
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

func (*set) Finals() []history.Op { return []history.Op{{F: history.FRead, Final: true}} }

func (*set) Check(h []history.Op, _ string) []checker.Result {
	return []checker.Result{checker.Set(h)}
}
