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
	//
	// A transaction too big to hold whole may come as pieces (binlog.Txn
	// More/Offset), in order, each made of whole events, and only when
	// the log holds all of it: the endpoint sends each piece as it comes.
	Next(ctx context.Context) (binlog.Txn, error)
	Close() error
}

// BatchCursor is a Cursor that can hand over every transaction it has
// ready at once. The endpoint's reader passes one batch per wake-up of
// the writer instead of one transaction, which is most of its per-event
// cost when the replica follows closely. Next and NextBatch may be mixed.
type BatchCursor interface {
	Cursor
	// NextBatch blocks like Next until at least one transaction is
	// available, then returns up to max of them (max >= 1), in order.
	// The slice is the caller's; the Events are not (see Next).
	NextBatch(ctx context.Context, max int) ([]binlog.Txn, error)
}
