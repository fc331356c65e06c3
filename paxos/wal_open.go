package paxos

import "phxgo/wal"

// openWAL opens the Badger-backed wal, synced on every group commit.
func openWAL(dir string) (Storage, error) {
	return wal.Open(dir, wal.Options{})
}
