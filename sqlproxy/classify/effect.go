package classify

// TxEffect is what a statement may do to an open transaction. The proxy
// needs it only when a backend connection breaks after the statement was
// sent inside a transaction: it decides whether the client is told
// "rolled back" (definite) or "outcome unknown".
type TxEffect uint8

const (
	// TxMayCommit: the statement may commit the open transaction,
	// explicitly (COMMIT) or implicitly (BEGIN, DDL, CALL of a procedure
	// that commits, SET autocommit=1, LOCK TABLES, anything unknown).
	TxMayCommit TxEffect = iota
	// TxKeeps: the statement never ends the transaction (queries, DML,
	// savepoints, session SETs); a lost connection rolled it back.
	TxKeeps
	// TxRollsBack: ROLLBACK (not ROLLBACK TO SAVEPOINT, not AND CHAIN):
	// the transaction ends rolled back whether or not the statement ran.
	TxRollsBack
)

// Effect classifies sql for TxEffect. It errs towards TxMayCommit: only
// statements known never to commit are TxKeeps (MariaDB forbids commits
// in stored functions and triggers, so queries and DML qualify; CALL does
// not). It runs on the failure path only, so it rescans the text.
func Effect(sql string) TxEffect {
	info := Classify(sql)
	if info.Multi {
		return TxMayCommit
	}
	s := scanner{src: sql}
	var scratch Info
	first := s.word(&scratch)
	switch first {
	case "SELECT", "SHOW", "DESCRIBE", "DESC", "EXPLAIN", "WITH", "VALUES", "TABLE", "(",
		"INSERT", "UPDATE", "DELETE", "REPLACE", "DO", "SAVEPOINT", "RELEASE", "USE":
		return TxKeeps
	case "SET":
		if info.Autocommit == 1 {
			return TxMayCommit
		}
		return TxKeeps
	case "ROLLBACK":
		// ROLLBACK [WORK] TO [SAVEPOINT] x and ROLLBACK AND CHAIN leave
		// the client inside a transaction (AND NO CHAIN does not).
		prev := ""
		for w := s.word(&scratch); w != ""; w = s.word(&scratch) {
			if w == "TO" || w == "CHAIN" && prev != "NO" {
				return TxKeeps
			}
			prev = w
		}
		return TxRollsBack
	}
	return TxMayCommit
}
