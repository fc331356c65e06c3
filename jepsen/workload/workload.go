package workload

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"phxgo/jepsen/checker"
	"phxgo/jepsen/history"
)

// Names of the workloads.
var Names = []string{"register", "bank", "set", "append", "big"}

// ErrUnknown: a -workload name that is none of Names.
var ErrUnknown = errors.New("unknown workload")

// Workload is one kind of test. Generate is called by one client goroutine
// at a time with that client's rand; Execute may run concurrently.
type Workload interface {
	Name() string
	// Setup creates the schema and initial rows; it must be idempotent
	// (the harness retries it while the cluster settles).
	Setup(ctx context.Context, db *sql.DB) error
	// Generate returns the next operation to invoke (F, Key, Arg, Txn).
	Generate(rng *rand.Rand) history.Op
	// Execute performs op, setting Outcome, Result/Txn lists and Error.
	Execute(ctx context.Context, db *sql.DB, op *history.Op)
	// Finals returns the final reads to run once every fault is healed.
	Finals() []history.Op
	// Check judges the history; outDir receives any artefacts.
	Check(h []history.Op, outDir string) []checker.Result
}

// Options shared by the workloads.
type Options struct {
	Keys      int // register: keys in use at once; append: keys
	OpsPerKey int // register: ops on a key before moving to a fresh one
	Accounts  int // bank
	Balance   int64
	// RWSplit: the clients are on the read/write-split port (append:
	// read-only transactions become one autocommit SELECT there).
	RWSplit bool
	// big: bytes of one huge transaction (1 MiB rows) and of one bulk
	// load (1 KiB rows, one statement).
	BigTxnBytes, BigLoadBytes int64
}

// DefaultOptions are sized for a 60 s run of 10 clients.
func DefaultOptions() Options {
	return Options{Keys: 8, OpsPerKey: 150, Accounts: 5, Balance: 100, BigTxnBytes: 256 << 20, BigLoadBytes: 2 << 30}
}

// New returns the named workload.
func New(name string, o Options) (Workload, error) {
	switch name {
	case "register":
		return newRegister(o), nil
	case "bank":
		return newBank(o), nil
	case "set":
		return &set{}, nil
	case "append":
		return newAppend(o), nil
	case "big":
		return newBig(o), nil
	}
	return nil, fmt.Errorf("%w %q (want %s)", ErrUnknown, name, strings.Join(Names, ", "))
}

// Valid reports whether name is a workload.
func Valid(name string) bool { return slices.Contains(Names, name) }

// Schema is the database the workloads use.
const Schema = "jepsen"

func createDB(ctx context.Context, db *sql.DB, stmts ...string) error {
	for _, s := range stmts {
		if _, err := db.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("setup %q: %w", s, err)
		}
	}
	return nil
}

// txn runs body in a transaction and classifies the outcome: errors before
// COMMIT are fail (rolled back; COMMIT never sent), an error of COMMIT is
// info. body returning errDefinite-wrapped errors aborts as fail too.
func txn(ctx context.Context, db *sql.DB, opts *sql.TxOptions, op *history.Op, body func(*sql.Tx) error) {
	tx, err := db.BeginTx(ctx, opts)
	if err != nil {
		op.Outcome, op.Error = history.Fail, "begin: "+err.Error()
		// A BEGIN whose backend was lost leaves sqlproxy's session in an
		// aborted transaction that refuses every statement until the
		// client says ROLLBACK (a no-op outside a transaction). The pool
		// has one connection, so this reaches the same session.
		_, _ = db.ExecContext(ctx, "ROLLBACK")
		return
	}
	if err := body(tx); err != nil {
		_ = tx.Rollback()
		op.Outcome, op.Error = history.Fail, err.Error()
		return
	}
	if err := tx.Commit(); err != nil {
		op.Outcome, op.Error = history.Info, "commit: "+err.Error()
		return
	}
	op.Outcome = history.OK
}
