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
//
// Outcomes (see package history): a statement in autocommit mode that
// returns one of the MySQL errors proving it did not execute (duplicate
// key, deadlock, lock wait timeout, read-only, ...) is fail; any other
// error is info. In an explicit transaction every error before COMMIT is
// fail (no COMMIT was sent, so nothing can commit); an error from COMMIT
// itself is info. Errors of reads are fail: a read changes nothing.
package workload
