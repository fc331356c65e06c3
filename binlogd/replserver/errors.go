package replserver

import "errors"

var (
	// ErrPurged means the log no longer holds the transactions that follow
	// the replica's position: the replica must be reseeded. Sent to the
	// replica as error 1236.
	ErrPurged = errors.New("replserver: the log no longer holds the transactions after the replica's position (purged)")
	// ErrUnknownPosition means the replica's position is not a GTID of the
	// log: it is ahead of the log, forked from it, or in another domain.
	// Sent to the replica as error 1236.
	ErrUnknownPosition = errors.New("replserver: replica position is not in the log")
	// ErrBadTxn means a transaction handed to the endpoint does not have the
	// wire shape package binlog fixes.
	ErrBadTxn = errors.New("replserver: malformed transaction")
	// ErrBadPacket means a client sent a packet the endpoint cannot decode;
	// the connection is closed.
	ErrBadPacket = errors.New("replserver: malformed packet")
	// ErrServerClosed is returned by Serve after Close.
	ErrServerClosed = errors.New("replserver: server closed")
	// ErrBadConfig names a bad Config field.
	ErrBadConfig = errors.New("replserver: bad config")
)
