// Package wal is the durable state of a Paxos acceptor and learner, kept in
// Badger: the promised ballot, the accepted (ballot, value) of every
// instance, the chosen index, and the applied index with the state
// machine's snapshot taken right after it.
//
// Contract (used by package paxos):
//
//	Open(dir, opts) (*Log, error)
//	(*Log).HardState() HardState               // as of the last durable write
//	(*Log).Save(Update) error                  // atomic + durable; safe for concurrent callers; group-committed
//	(*Log).SaveApplied(applied uint64, snapshot []byte) error
//	(*Log).Get(index) (Accepted, bool, error)  // bool=false: nothing accepted there
//	(*Log).Range(from, to uint64, maxBytes int) ([]Accepted, error) // ascending, [from, to]
//	(*Log).LastIndex() uint64                   // highest index with an accepted value
//	(*Log).TruncateBelow(index uint64) error     // drop instances < index, by range
//	(*Log).Close() error
//
// Every record carries a CRC32C; a torn or corrupted record is reported as
// an error (ErrCorrupt) naming the instance, never returned as data.
package wal
