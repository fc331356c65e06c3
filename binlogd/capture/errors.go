package capture

import "errors"

// Sentinel errors. Run returns them wrapped with details; test with errors.Is.
var (
	// ErrUnsafe means MariaDB committed, or could commit, a transaction
	// without capture's ACK: semi-sync turned OFF, Rpl_semi_sync_master_no_tx
	// grew, or the stream arrived without semi-sync headers. Transactions may
	// be visible that are not in the Paxos log: binlogd must fence and
	// recover this node, never keep serving as master.
	ErrUnsafe = errors.New("capture: master is not safely semi-synchronous")
	// ErrBadSettings means CheckServer found MariaDB settings that break the
	// write path's guarantees; the message names every wrong variable.
	ErrBadSettings = errors.New("capture: MariaDB settings unsafe for phxgo")
	// ErrRejected wraps the sink's error: a batch is not durable (rejected,
	// or its outcome is unknown). Its transactions stay un-ACKed.
	ErrRejected = errors.New("capture: batch not durable")
	// ErrProtocol means the binlog stream could not be understood (bad
	// framing, checksum, or transaction grouping). Reconnecting would not help.
	ErrProtocol = errors.New("capture: binlog stream protocol error")
	// ErrBadConfig means Config.Validate failed; the message names the field.
	ErrBadConfig = errors.New("capture: invalid config")
)
