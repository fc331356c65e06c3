package paxos

import "phxgo/wal"

// openWAL opens the node's wal, synced on every group commit.
func openWAL(cfg Config) (Storage, error) {
	return wal.Open(cfg.Dir, wal.Options{SegmentBytes: cfg.WALSegmentBytes, PlainSync: cfg.WALPlainSync, Logger: cfg.Logger})
}
