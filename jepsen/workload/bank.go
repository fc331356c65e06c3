package workload

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"

	"phxgo/jepsen/checker"
	"phxgo/jepsen/history"
)

// errInsufficient aborts a transfer that would overdraw an account (fail).
var errInsufficient = errors.New("insufficient balance")

// bank: accounts 0..n-1 in bank(id, balance), each starting at Balance.
type bank struct{ o Options }

func newBank(o Options) *bank { return &bank{o: o} }

func (*bank) Name() string { return "bank" }

func (b *bank) Setup(ctx context.Context, db *sql.DB) error {
	if err := createDB(ctx, db,
		"CREATE TABLE IF NOT EXISTS bank (id INT PRIMARY KEY, balance BIGINT NOT NULL) ENGINE=InnoDB"); err != nil {
		return err
	}
	for i := 0; i < b.o.Accounts; i++ {
		if _, err := db.ExecContext(ctx, "INSERT IGNORE INTO bank (id, balance) VALUES (?, ?)", i, b.o.Balance); err != nil {
			return fmt.Errorf("setup account %d: %w", i, err)
		}
	}
	return nil
}

func (b *bank) Generate(rng *rand.Rand) history.Op {
	if rng.IntN(2) == 0 {
		return history.Op{F: history.FRead}
	}
	from := rng.Int64N(int64(b.o.Accounts))
	to := (from + 1 + rng.Int64N(int64(b.o.Accounts-1))) % int64(b.o.Accounts)
	return history.Op{F: history.FTransfer, Arg: []int64{from, to, 1 + rng.Int64N(5)}}
}

func (b *bank) Execute(ctx context.Context, db *sql.DB, op *history.Op) {
	switch op.F {
	case history.FRead:
		bal, err := readBalances(ctx, db)
		op.Outcome, op.Error, op.Result = readOutcome(err), errString(err), bal
	case history.FTransfer:
		from, to, amount := op.Arg[0], op.Arg[1], op.Arg[2]
		txn(ctx, db, nil, op, func(tx *sql.Tx) error {
			var bal int64
			// Lock both rows in id order (no deadlock between transfers).
			rows, err := tx.QueryContext(ctx, "SELECT id, balance FROM bank WHERE id IN (?, ?) ORDER BY id FOR UPDATE", from, to)
			if err != nil {
				return err
			}
			found := 0
			for rows.Next() {
				var id int64
				var b int64
				if err := rows.Scan(&id, &b); err != nil {
					rows.Close()
					return err
				}
				found++
				if id == from {
					bal = b
				}
			}
			if err := rows.Close(); err != nil {
				return err
			}
			if err := rows.Err(); err != nil {
				return err
			}
			if found != 2 {
				return fmt.Errorf("found %d of accounts %d, %d", found, from, to)
			}
			if bal < amount {
				return errInsufficient
			}
			if _, err := tx.ExecContext(ctx, "UPDATE bank SET balance = balance - ? WHERE id = ?", amount, from); err != nil {
				return err
			}
			_, err = tx.ExecContext(ctx, "UPDATE bank SET balance = balance + ? WHERE id = ?", amount, to)
			return err
		})
	}
}

// readBalances reads every balance in one statement (one snapshot).
func readBalances(ctx context.Context, db *sql.DB) ([]int64, error) {
	rows, err := db.QueryContext(ctx, "SELECT balance FROM bank ORDER BY id")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []int64{}
	for rows.Next() {
		var b int64
		if err := rows.Scan(&b); err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, rows.Err()
}

func (b *bank) Finals() []history.Op { return []history.Op{{F: history.FRead, Final: true}} }

func (b *bank) Check(h []history.Op, _ string) []checker.Result {
	return []checker.Result{checker.Bank(h, b.o.Accounts, int64(b.o.Accounts)*b.o.Balance)}
}
