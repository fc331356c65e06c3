// Package binlog holds the types binlogd's capture, its replication
// endpoint and the Paxos log agree on: a MariaDB GTID, and a transaction as
// the raw binlog events that make it up.
//
// Wire shape of a transaction inside a BinlogBatch entry: the raw events
// concatenated, each exactly as the master sent it (19-byte v4 header whose
// event_size delimits it, body, CRC32 footer), from the GTID event to the
// event that ends the transaction (XID, COMMIT query, or the DDL query of a
// standalone GTID group). The master's log_pos values are kept as they are;
// the replication endpoint rewrites log_pos and the CRC for its own
// virtual binlog file.
//
// Pieces. A transaction bigger than one bounded buffer is never held
// whole: capture hands it to the log as pieces in stream order (Txn.More:
// more follows; Txn.Offset: where the piece starts within the
// transaction's events), the log carries them as fragments
// (masterlease), and the replication endpoint streams them to a replica
// one piece at a time. A piece that capture or the endpoint produces
// holds whole events only; a log fragment may end inside an event.
package binlog
