// Package replserver is binlogd's replication-master endpoint: real
// MariaDB 10.11 replicas connect to it as to a master
// (CHANGE MASTER TO MASTER_HOST=<binlogd>, MASTER_USE_GTID=slave_pos) and
// receive the valid transactions of the Paxos log, never anything else:
// the node's own MariaDB, and outside replicas (analytics, a remote DR
// copy) with an account that may only dump the log.
//
//	replica IO thread                    replserver                      Source (Paxos log)
//	  1 handshake, native password ──▶  go-mysql server handshake (TLS if asked)
//	  2 SELECT UNIX_TIMESTAMP(), SHOW VARIABLES LIKE 'SERVER_ID',
//	    SET @master_heartbeat_period, SET @master_binlog_checksum,
//	    SET @mariadb_slave_capability, SELECT @@GLOBAL.gtid_domain_id,
//	    SET @slave_connect_state='0-1-41', ... ──▶ session (queries.go)
//	  3 COM_REGISTER_SLAVE ──────────▶  OK
//	  4 COM_BINLOG_DUMP ─────────────▶  Open(@slave_connect_state) ─────▶ cursor after 0-1-41
//	                                       │ ErrPurged / ErrUnknownPosition
//	    ◀── ERR 1236 "<reason>" ───────────┘ (replica stops: Last_IO_Errno 1236)
//	  5 ◀── fake ROTATE phxgo-bin.000001:4, FORMAT_DESCRIPTION (10.11, CRC32),
//	        GTID_LIST [0-1-41]
//	  6 ◀── each transaction's events ◀──── Next() (blocks)
//	        log_pos rewritten to the virtual file, CRC32 recomputed
//	  7 ◀── HEARTBEAT when idle for min(HeartbeatPeriod, replica's period)
//
// A slow seek. Open may take longer than the replica's slave_net_timeout
// (a position behind a multi-GiB transaction in the log). If it has not
// returned after one heartbeat period, 5 goes out early and heartbeats
// follow until it does; a refusal then comes after the preamble. Silent,
// the replica reconnected and each retry sought again, forever.
//
// The virtual binlog. Every dump connection streams its own virtual file,
// phxgo-bin.000001 from position 4: each event's log_pos is its end offset
// there and its CRC32 is recomputed; the transaction bytes are otherwise
// exactly the original master's (package binlog's wire shape). In GTID mode
// a replica resumes from @@gtid_slave_pos, so positions are only display;
// they are kept consistent (ROTATE, FDE, GTID_LIST, events, heartbeats
// all agree) because the replica checks heartbeats against them. Past 1 GiB
// a dump rotates to the next file name, since log_pos is 32 bits.
//
// FORMAT_DESCRIPTION's post-header table comes from a captured real 10.11
// event (mariadb-10.11.19-fde.bin, TestCaptureFDE regenerates it); its
// created timestamp is 0 so a reconnect is not taken for a master restart.
// ANNOTATE_ROWS events are sent only to replicas that ask for them.
//
// Reading ahead. A reader goroutine per dump pulls from the cursor and
// hands the writer a batch at a time (BatchCursor.NextBatch: whatever one
// read of the log yielded, up to 256 transactions; a plain Cursor gives
// one per Next), so a replica that follows closely costs one hand-off and
// one flush per log read, not per transaction. binlogd's cursor reads the
// Paxos log's in-memory tail (paxos Config.ReadTailBytes), and storage
// only when the replica is behind it.
//
// Big transactions. A split transaction (many log fragments) comes from
// the cursor in pieces of whole events once the log holds all of it, and
// each piece is sent as it comes: the endpoint never holds a transaction
// whole, whatever its size. Its events stay in one virtual file (a file
// rotates only between transactions). One event is sent as one packet of
// up to 1 GiB (max_allowed_packet; 16 MB frames), as a MariaDB master's
// dump thread does; replicas accept it with slave_max_allowed_packet=1G.
//
// Positions. Source.Open decides what a replica's GTID position means: a
// position the log has purged is ErrPurged; one the log does not hold
// (ahead of it, forked, another domain) is ErrUnknownPosition. Both reach
// the replica as error 1236 with the error text, so a replica with extra
// transactions is refused rather than silently skipped past.
//
// Who may connect (auth.go, outside.go). Two accounts, both
// mysql_native_password, and nobody else: any other name is checked
// against a random password, so a stranger gets 1045 Access denied
// whatever name it tries and learns no names.
// An address that failed Config.LoginFailureBurst logins gets one more
// attempt per LoginFailureEvery, and 1129 in place of the greeting
// otherwise (loginbudget.go); loopback and the endpoint's own listen
// address, where the node's own MariaDB comes from, are exempt.
//
//	account            who                      TLS                      may
//	User (capture)     the node's own MariaDB   optional (as before)     everything the endpoint answers
//	ReplUser           outside replicas         required when offered    a replica's connect queries,
//	                                                                     COM_REGISTER_SLAVE, COM_BINLOG_DUMP
//
// With Config.TLS set (the node runs with TLS) the handshake offers
// CLIENT_SSL to everyone; the outside account's login without it is
// refused after its password checked out (1045, saying MASTER_SSL=1).
// The outside account's other queries (SELECT 1, SHOW BINARY LOGS, ...)
// and COM_INIT_DB get 1227 and the connection stays; its dump from a
// server_id below MinOutsideServerID (the cluster's own ids) gets 1236,
// since a replica sharing a member's server_id would silently skip that
// member's transactions. Positions refused for anyone end with how to
// reseed (positions.go): an outside replica from a `binlogd backup`.
// Outside replicas do not hold back the log's compaction.
//
// Failure handling. A malformed command packet closes that connection; a
// panic in a connection handler (go-mysql's handshake) is recovered and
// closes only that connection. A second dump from a replica server_id ends
// the first (the replica reconnected; the old socket may be half-open), as
// MariaDB does. A replica that stops reading is dropped after WriteTimeout.
// The endpoint is asynchronous: semi-sync probes get an empty answer.
package replserver
