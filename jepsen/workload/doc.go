// Package workload generates and runs the Jepsen client operations against
// the cluster's sqlproxy ports, and says which checkers judge them.
//
//	register  single-row read / write / compare-and-set on many keys (a
//	          bounded number of ops per key, then fresh keys, so porcupine
//	          stays fast); checked for linearizability
//	bank      transfers between accounts in a transaction with
//	          SELECT ... FOR UPDATE; reads of all balances; checked for a
//	          constant total
//	set       inserts of unique values; a final read must hold every
//	          acknowledged one, none twice, nothing unattempted
//	append    Elle list-append transactions (SERIALIZABLE) over a few keys;
//	          a TEXT column appended with CONCAT; reads return the list
//	big       256 MiB transactions of 1 MiB rows and 2 GiB loads in one
//	          LOAD DATA LOCAL INFILE (the file generated as it is sent,
//	          big_load.go); every batch whole exactly once or absent
//
// The append workload on the read/write-split port (-rwsplit): a third of
// the ops only read, and run as ONE autocommit SELECT ... WHERE k IN (...)
// with the keys inline (a text query, which the proxy may route to a
// replica), marked checker.ReplicaRead; transactions run as usual. What
// that port promises (sqlproxy doc.go, route.go, health.go): a write or
// any statement inside a transaction runs on the master under its lease,
// as on the linearizable port; a read outside a transaction goes
// round-robin to a replica its proxy found healthy (replicating, at most
// MaxReplicaLag 10 s and MaxReplicaBehind 10,000 transactions behind, by
// default), else to the master. A replica's MariaDB applies only the
// chosen, valid log, in order, so one SELECT there is a snapshot of a
// committed prefix of the history: serializable with everything else,
// never garbage, aborted or forked, but it may be stale. Not promised:
// read-your-writes (that is sqlproxy -mode causal, not this port) and
// monotonic reads (consecutive reads may hit different replicas), nor a
// hard staleness bound (the lag is as of the last health check).
// checker.Append checks exactly that.
//
// Outcomes (see package history): a statement in autocommit mode that
// returns one of the MySQL errors proving it did not execute (duplicate
// key, deadlock, lock wait timeout, read-only, ...) is fail; any other
// error is info. In an explicit transaction every error before COMMIT is
// fail (no COMMIT was sent, so nothing can commit); an error from COMMIT
// itself is info. Errors of reads are fail: a read changes nothing.
package workload
