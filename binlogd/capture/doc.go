// Package capture is binlogd's master-side binlog capture: binlogd
// connects to its local MariaDB as the master's only semi-sync replica
// and holds each semi-sync ACK until the transaction is durable (chosen
// and valid) in the Paxos log. A client's COMMIT therefore returns only
// after a majority holds the transaction.
//
//	clients                 MariaDB master (AFTER_SYNC, wait_no_slave, max timeout)
//	   │ COMMIT ──(1)──▶ binlog write+fsync ──(2)── dump thread ──▶ ┐
//	   │                                                            │ 0x00 0xef flag event
//	   │                         capture (this package)             ▼
//	   │        ┌──────────────────────────────────────────────────────────┐
//	   │        │ reader goroutine: packet → semi-sync prefix → parser  (3)│
//	   │        │   → grouper: GTID .. XID/COMMIT/DDL = one binlog.Txn     │
//	   │        │ pipeline: dedupe by GTID, batch ≤ BatchMaxBytes      (4) │
//	   │        │   → Sink.Commit × MaxInFlight (Paxos propose+apply)  (5) │
//	   │        │   ← results, retired in order; durable = last retired    │
//	   │        │ one cumulative ACK (0xef, pos, file) per round       (6) │
//	   │        └──────────────────────────────────────────────────────────┘
//	   ◀──(7)── engine commit, OK to client
//	        monitor: SHOW GLOBAL STATUS every 200 ms → ErrUnsafe       (8)
//
//	 1. The client's transaction is written and synced to the binlog; with
//	    AFTER_SYNC it is not yet committed in InnoDB and invisible to others.
//	 2. The dump thread sends each event with a 2-byte semi-sync prefix; the
//	    event ending a transaction the master waits for has flag 0x01.
//	 3. The reader reads packets itself (MariaDB resets packet sequence
//	    numbers around ACKs, so they are not checked), verifies every
//	    event's CRC32 with go-mysql's BinlogParser and cuts transactions.
//	 4. Transactions at or below the last durable GTID are re-deliveries
//	    after a reconnect and are dropped (their ACK is re-sent if asked).
//	 5. While batches are in flight, reading continues and the next batch
//	    grows: the batch size adapts to the sink's latency (group commit).
//	 6. When the oldest in-flight batches finish, capture sends ONE ACK for
//	    the end position of the newest of them (MariaDB accepts cumulative
//	    ACKs), and only if some of them carried an ACK request.
//	 7. MariaDB releases every commit at or below that position.
//	 8. If MariaDB ever stops waiting (Rpl_semi_sync_master_status OFF, or
//	    Rpl_semi_sync_master_no_tx grows), Run returns ErrUnsafe: a commit
//	    may be visible that is not in the Paxos log.
//
// Invariants:
//   - ACK(pos) is sent only when every transaction ending at or before pos
//     is durable: batches retire strictly in stream order.
//   - The sink sees each GTID once per Capture, in increasing order; a
//     reconnect first waits for every in-flight batch's outcome, then
//     resumes right after the last durable GTID (never the master's
//     @@gtid_binlog_pos). The master does not re-send that GTID, so each
//     new connection first ACKs the durable position: a commit that became
//     durable while the old connection died is released.
//   - The fake ROTATE that opens the stream precedes any
//     FORMAT_DESCRIPTION; capture decodes it itself and checks its CRC32
//     (go-mysql's parser would leave the CRC in the file name, and an ACK
//     naming a wrong file releases commits that are not durable).
//   - Before each registration capture kills and awaits its account's old
//     dump connections: two live registrations with one server_id froze
//     MariaDB 10.11.
//
// Failure cases: a sink error is fatal (ErrRejected; the batch's commits
// stay blocked and binlogd must fence and recover the node); a lost
// connection is retried with backoff; an ERR 1236 (GTID not in the
// binlog), access denied, a second GTID domain or an undecodable stream
// is fatal. CheckServer refuses settings that would let MariaDB commit
// without the ACK; binlogd runs it at start and Run runs it again.
package capture
