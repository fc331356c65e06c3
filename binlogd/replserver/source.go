package replserver

import (
	"context"

	"phxgo/binlogd/binlog"
)

// Source is the valid binlog, in order. binlogd implements it over the
// Paxos log; MemorySource is an in-memory one.
type Source interface {
	// Open positions a cursor right after pos, the replica's GTID position
	// (@slave_connect_state; the log has one domain). An empty pos means
	// "from the first transaction".
	//
	// Errors: ErrPurged when the log no longer holds what follows pos;
	// ErrUnknownPosition when pos is not a GTID of the log (ahead of it,
	// forked, or another domain). Both are final for this pos: the endpoint
	// reports them to the replica as error 1236 with the error's text.
	Open(ctx context.Context, pos binlog.GTIDList) (Cursor, error)
}

// Cursor reads transactions in log order.
type Cursor interface {
	// Next blocks until the next transaction is available or ctx ends. The
	// returned Events must not be modified by the caller; the endpoint
	// copies them before rewriting. ErrPurged means the log was purged past
	// the cursor while it was reading.
	Next(ctx context.Context) (binlog.Txn, error)
	Close() error
}
