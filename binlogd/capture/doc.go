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
//	   │        │ pipeline goroutine: dedupe by GTID, batch what waits (4) │
//	   │        │   → Sink.Propose, in stream order, queues only       (5) │
//	   │        │ waiter goroutine: Pending.Wait in the same order     (6) │
//	   │        │   ← outcomes, retired in order; durable = last retired   │
//	   │        │ one cumulative ACK (0xef, pos, file) per round       (7) │
//	   │        └──────────────────────────────────────────────────────────┘
//	   ◀──(8)── engine commit, OK to client
//	        monitor: SHOW GLOBAL STATUS every 200 ms → ErrUnsafe       (9)
//
//	 1. The client's transaction is written and synced to the binlog; with
//	    AFTER_SYNC it is not yet committed in InnoDB and invisible to others.
//	 2. The dump thread sends each event with a 2-byte semi-sync prefix; the
//	    event ending a transaction the master waits for has flag 0x01.
//	 3. The reader reads packets itself (MariaDB resets packet sequence
//	    numbers around ACKs, so they are not checked), verifies every
//	    event's CRC32 and cuts transactions. It decodes only what cutting
//	    needs (decode.go: the GTID, a query's text, the checksum
//	    algorithm), reusing one packet buffer, rather than building a Go
//	    value per event with go-mysql's BinlogParser (TestDecodeMatchesGoMySQL
//	    checks the two agree on a real binlog).
//	    A transaction bigger than FragmentBytes is not held whole: the
//	    grouper hands it on in pieces (about FragmentBytes each, cut at
//	    event boundaries) as its events arrive, and each piece is a
//	    batch of its own, proposed in order like any other (the sink
//	    writes it as log fragments). Reading pauses while BufferBytes of
//	    events wait for durability, so capture holds at most about
//	    BufferBytes + FragmentBytes + one event, whatever the
//	    transaction's size.
//	 4. Transactions at or below the last durable GTID are re-deliveries
//	    after a reconnect and are dropped (their ACK is re-sent if asked).
//	    The pipeline takes every transaction already waiting before it
//	    proposes, so a batch is what arrived while the previous ones were
//	    being proposed: one MariaDB commit group usually makes one batch.
//	    The first transaction of a group commit of two or more (its GTID
//	    event carries the group's commit id) that arrives alone waits
//	    for the next one, at most GroupHold (pipeline.holding): the
//	    group's commits wait for its last ACK anyway.
//	 5. The pipeline goroutine hands each batch to Sink.Propose itself,
//	    one call at a time, in stream order. binlogd's sink only queues the
//	    entries (paxos.Node.ProposeAsync, which keeps call order), so the
//	    log chooses them in stream order: each is valid when applied, none
//	    is rejected for a broken chain, none is proposed twice. Up to
//	    MaxInFlight (2) batches wait for their outcome at once; beyond
//	    that the pending batch grows (to BatchMaxBytes) and reading pauses.
//	    Two are enough: MariaDB queues the next commit group behind the
//	    semi-sync wait (below), so more slots mostly cut one group, which
//	    reaches the dump over several reads, into more batches, each a
//	    Paxos command to encode, queue and await (64 sysbench threads:
//	    12.3 txns per batch with 16 slots, 14.3-15.2 with 2). The log
//	    already merges queued commands into one value, so transactions
//	    per value hardly moved (16 threads: 4.2-4.4 either way): that is
//	    MariaDB's group size, and capture cannot raise it without holding
//	    commits (holding a batch below 8 txns raised p95).
//	 6. One waiter goroutine awaits the outcomes in proposal order, which
//	    is the order the log chooses them in, so waiting in order costs
//	    nothing and no goroutine is started per batch.
//	 7. When the oldest batches are durable, capture sends ONE ACK for the
//	    end position of the newest of them (MariaDB accepts cumulative
//	    ACKs), and only if some of them carried an ACK request.
//	 8. MariaDB releases every commit at or below that position.
//	 9. If MariaDB ever stops waiting (Rpl_semi_sync_master_status OFF, or
//	    Rpl_semi_sync_master_no_tx grows), Run returns ErrUnsafe: a commit
//	    may be visible that is not in the Paxos log.
//
// Invariants:
//   - ACK(pos) is sent only when every transaction ending at or before pos
//     is durable: batches retire strictly in stream order.
//   - The sink sees each GTID once per Capture, in increasing order, from
//     one goroutine; a batch after one that is not durable never becomes
//     durable (it chains on it). A reconnect first waits for every
//     in-flight batch's outcome, then resumes right after the last
//     durable GTID (never the master's
//     @@gtid_binlog_pos). The master does not re-send that GTID, so each
//     new connection first ACKs the durable position: a commit that became
//     durable while the old connection died is released.
//   - The fake ROTATE that opens the stream precedes any
//     FORMAT_DESCRIPTION; capture decodes it itself and checks its CRC32
//     (go-mysql's parser would leave the CRC in the file name, and an ACK
//     naming a wrong file releases commits that are not durable).
//   - A split transaction is ACKed only when its last piece is durable.
//     After a reconnect in the middle of one, the master re-sends it
//     from its GTID event; capture drops the bytes already durable after
//     checking their CRC32 against what it made durable, and goes on at
//     the next offset (the log accepts a fragment only at the offset its
//     partial transaction has reached). If the term ends first, the
//     pieces in the log are voided and never applied; recovery cuts the
//     transaction from this MariaDB.
//   - Before each registration capture kills and awaits its account's old
//     dump connections: two live registrations with one server_id froze
//     MariaDB 10.11.
//
// Where a commit's time goes (issue 19; sysbench oltp_insert, 16
// threads, one 2-core host): MariaDB's group-commit leader writes and
// syncs its group, lets the dump thread send it, then holds
// LOCK_after_binlog_sync while it waits for the ACK of each transaction
// in the group; the next group's leader writes and syncs but waits for
// that lock while holding LOCK_log, so everyone else queues behind it.
// One commit therefore spends about three ACK rounds in MariaDB (queued,
// written, waiting), and Rpl_semi_sync_master_tx_waits equals the group
// commits. Capture's own share of a round is small (batching under 0.1
// ms per batch, capture_read_to_propose_seconds_sum); the round is the
// log (capture_propose_to_durable_seconds_sum, paxos commit latency),
// which on a shared 2-core host is mostly waiting for CPU. Capture's
// share of the master binlogd's CPU is about a fifth (reading the dump,
// parsing without row decoding, grouping, the ACK write); the rest is
// the Paxos transport, the wal and the Go scheduler (README,
// "Performance on one host", session 12).
//
// Failure cases: a sink error is fatal (ErrRejected; the batch's commits
// stay blocked and binlogd must fence and recover the node); a lost
// connection is retried with backoff; an ERR 1236 (GTID not in the
// binlog), access denied, a second GTID domain or an undecodable stream
// is fatal. CheckServer refuses settings that would let MariaDB commit
// without the ACK; binlogd runs it at start and Run runs it again.
package capture
