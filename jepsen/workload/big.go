package workload

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"sync/atomic"

	"phxgo/jepsen/checker"
	"phxgo/jepsen/history"
)

// big: huge transactions and bulk loads under faults (issue 20.4). Each
// add writes one batch in one transaction, either
//
//	txn   BigTxnBytes as 1 MiB rows, one INSERT each, then COMMIT
//	      (REPEAT builds a row on the server: the statements are small,
//	      the binlog holds one 1 MiB row event per row), or
//	load  BigLoadBytes as 1 KiB rows in ONE statement, a real LOAD DATA
//	      LOCAL INFILE through the proxy: the client generates the file
//	      as it sends it (a go-sql-driver Reader:: handler, nothing on
//	      disk, nothing held), the proxy relays the file packets, the
//	      master loads it as one transaction (in ROW format, many rows
//	      events). LOCAL needs no FILE privilege, which the application
//	      account lacks; the nodes run with local_infile=ON (README
//	      "Security").
//
// The rows carry an AUTO_INCREMENT id and no unique key on (batch, seq),
// so a batch applied twice shows as twice its rows. Reads count rows and
// bytes per batch. The checker (big_check.go) wants every batch either
// whole exactly once or absent: acknowledged ones whole, failed ones
// absent, unknown ones either way, and no read ever sees part of one.
type big struct {
	o       Options
	next    atomic.Int64
	started atomic.Int64
}

// Arg of an add: [batch, kind, rows, bytes per row].
const (
	bigTxn  = 0
	bigLoad = 1
	// loadRow is a load row's pad: with the id and keys about 1 KiB.
	loadRow = 1000
	txnRow  = 1 << 20
)

func newBig(o Options) *big { return &big{o: o} }

func (*big) Name() string { return "big" }

func (*big) Setup(ctx context.Context, db *sql.DB) error {
	return createDB(ctx, db, `CREATE TABLE IF NOT EXISTS big_rows (id BIGINT AUTO_INCREMENT PRIMARY KEY,
		batch BIGINT NOT NULL, seq INT NOT NULL, pad LONGBLOB NOT NULL, KEY (batch)) ENGINE=InnoDB`)
}

// Generate: every third add is a load; one read per four adds. The
// first add is a load, so even a short run has one.
func (b *big) Generate(rng *rand.Rand) history.Op {
	if b.started.Load() > 0 && rng.IntN(5) == 0 {
		return history.Op{F: history.FRead}
	}
	n := b.started.Add(1)
	batch := b.next.Add(1)
	if n%3 == 1 {
		rows := max(1, b.o.BigLoadBytes/loadRow)
		return history.Op{F: history.FAdd, Key: batch, Arg: []int64{batch, bigLoad, rows, loadRow}}
	}
	rows := max(1, b.o.BigTxnBytes/txnRow)
	return history.Op{F: history.FAdd, Key: batch, Arg: []int64{batch, bigTxn, rows, txnRow}}
}

func (*big) Execute(ctx context.Context, db *sql.DB, op *history.Op) {
	switch op.F {
	case history.FAdd:
		batch, kind, rows, size := op.Arg[0], op.Arg[1], op.Arg[2], op.Arg[3]
		if kind == bigLoad {
			err := loadLocal(ctx, db, batch, rows, int(size))
			op.Outcome, op.Error = stmtOutcome(err), errString(err)
			return
		}
		txn(ctx, db, nil, op, func(tx *sql.Tx) error {
			for i := int64(1); i <= rows; i++ {
				if _, err := tx.ExecContext(ctx, fmt.Sprintf("INSERT INTO big_rows (batch, seq, pad) VALUES (%d, %d, REPEAT(CHAR(%d), %d))",
					batch, i, 65+i%26, size)); err != nil {
					return err
				}
			}
			return nil
		})
	case history.FRead:
		res, err := readBatches(ctx, db)
		op.Outcome, op.Error, op.Result = readOutcome(err), errString(err), res
	}
}

// readBatches returns [batch, rows, bytes] triples.
func readBatches(ctx context.Context, db *sql.DB) ([]int64, error) {
	rows, err := db.QueryContext(ctx, "SELECT batch, COUNT(*), SUM(LENGTH(pad)) FROM big_rows GROUP BY batch ORDER BY batch")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []int64{}
	for rows.Next() {
		var b, n, bytes int64
		if err := rows.Scan(&b, &n, &bytes); err != nil {
			return nil, err
		}
		out = append(out, b, n, bytes)
	}
	return out, rows.Err()
}

func (*big) Finals() []history.Op { return []history.Op{{F: history.FRead, Final: true}} }

func (*big) Check(h []history.Op, _ string) []checker.Result {
	return []checker.Result{CheckBig(h)}
}
