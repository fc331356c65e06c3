package workload

import (
	"context"
	"database/sql"
	"errors"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"phxgo/jepsen/checker"
	"phxgo/jepsen/history"
)

// register: table register(k, v). Values are small (0..4) so CAS often
// matches and reads often tell writes apart only by order.
type register struct {
	o     Options
	count atomic.Int64 // ops generated, to rotate keys

	mu   sync.Mutex
	used map[int64]bool
}

func newRegister(o Options) *register {
	return &register{o: o, used: map[int64]bool{}}
}

func (*register) Name() string { return "register" }

func (*register) Setup(ctx context.Context, db *sql.DB) error {
	return createDB(ctx, db,
		"CREATE TABLE IF NOT EXISTS register (k BIGINT PRIMARY KEY, v BIGINT NOT NULL) ENGINE=InnoDB")
}

func (r *register) Generate(rng *rand.Rand) history.Op {
	n := r.count.Add(1) - 1
	group := n / int64(r.o.Keys*r.o.OpsPerKey)
	key := group*int64(r.o.Keys) + rng.Int64N(int64(r.o.Keys))
	r.mu.Lock()
	r.used[key] = true
	r.mu.Unlock()
	op := history.Op{Key: key}
	switch rng.IntN(5) {
	case 0, 1:
		op.F = history.FRead
	case 2:
		op.F, op.Arg = history.FWrite, []int64{rng.Int64N(5)}
	default:
		op.F, op.Arg = history.FCAS, []int64{rng.Int64N(5), rng.Int64N(5)}
	}
	return op
}

func (r *register) Execute(ctx context.Context, db *sql.DB, op *history.Op) {
	switch op.F {
	case history.FRead:
		var v int64
		err := db.QueryRowContext(ctx, "SELECT v FROM register WHERE k = ?", op.Key).Scan(&v)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			op.Outcome, op.Result = history.OK, []int64{}
		case err != nil:
			op.Outcome, op.Error = readOutcome(err), err.Error()
		default:
			op.Outcome, op.Result = history.OK, []int64{v}
		}
	case history.FWrite:
		_, err := db.ExecContext(ctx,
			"INSERT INTO register (k, v) VALUES (?, ?) ON DUPLICATE KEY UPDATE v = VALUES(v)", op.Key, op.Arg[0])
		op.Outcome, op.Error = stmtOutcome(err), errString(err)
	case history.FCAS:
		// clientFoundRows=true in the DSN: affected = matched rows.
		res, err := db.ExecContext(ctx, "UPDATE register SET v = ? WHERE k = ? AND v = ?", op.Arg[1], op.Key, op.Arg[0])
		if err != nil {
			op.Outcome, op.Error = stmtOutcome(err), err.Error()
			return
		}
		n, err := res.RowsAffected()
		switch {
		case err != nil:
			op.Outcome, op.Error = history.Info, err.Error()
		case n == 0:
			op.Outcome, op.Error, op.Result = history.Fail, "cas mismatch", []int64{0}
		default:
			op.Outcome = history.OK
		}
	}
}

func (r *register) Finals() []history.Op {
	r.mu.Lock()
	defer r.mu.Unlock()
	var ops []history.Op
	for k := range r.used {
		ops = append(ops, history.Op{F: history.FRead, Key: k, Final: true})
	}
	return ops
}

func (r *register) Check(h []history.Op, outDir string) []checker.Result {
	opts := checker.RegisterOptions{Timeout: time.Minute}
	if outDir != "" {
		opts.HTMLPath = filepath.Join(outDir, "linearizability.html")
	}
	return []checker.Result{checker.Register(h, opts)}
}
