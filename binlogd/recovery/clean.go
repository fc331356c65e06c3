package recovery

import (
	"fmt"
	"io"
	"os"
)

// logInUse is LOG_EVENT_BINLOG_IN_USE_F in the FORMAT_DESCRIPTION event's
// header flags: set while the server writes the file, cleared when it
// closes it (rotation or clean shutdown).
const logInUse = 0x1

// ClosedCleanly reports whether the newest binlog file was closed by the
// server (a clean shutdown) rather than left in use by a crash or kill.
func ClosedCleanly(indexPath string) (bool, error) {
	files, err := Files(indexPath)
	if err != nil {
		return false, err
	}
	if len(files) == 0 {
		return true, nil
	}
	f, err := os.Open(files[len(files)-1])
	if err != nil {
		return false, err
	}
	defer f.Close()
	head := make([]byte, 4+19)
	if _, err := io.ReadFull(f, head); err != nil {
		return false, fmt.Errorf("recovery: %s: %w", files[len(files)-1], err)
	}
	if string(head[:4]) != string(magic) || head[4+4] != typeFormatDesc {
		return false, fmt.Errorf("%w: %s does not start with a format description", ErrNotBinlog, files[len(files)-1])
	}
	flags := uint16(head[4+17]) | uint16(head[4+18])<<8
	return flags&logInUse == 0, nil
}

// CutAfterCleanShutdown is the check binlogd runs before it cuts: after a
// clean shutdown, InnoDB has committed every transaction in the binlog,
// including those that waited for an ACK (a graceful shutdown commits
// them). Cutting such a transaction from the binlog cannot undo it.
func CutAfterCleanShutdown(plan Plan, clean bool) error {
	if !clean || len(plan.Cut) == 0 {
		return nil
	}
	return fmt.Errorf("%w: mariadbd was shut down cleanly with %d transactions the cluster never chose (%s); InnoDB committed them at shutdown and no binlog cut can undo that: reseed this node from a replica",
		ErrCommittedPastCut, len(plan.Cut), gtids(plan.Cut))
}

// NonTransactionalCut is the check binlogd runs before it cuts: a cut
// undoes an InnoDB transaction (XA recovery rolls it back), but not DDL.
// MariaDB 10.11 applies DDL before the semi-sync wait, and measured after
// kill -9 and a cut (TestDDLCutSurvives): DROP TABLE, ALTER TABLE (instant
// and copy), CREATE INDEX, TRUNCATE, CREATE and DROP DATABASE stay done;
// CREATE TABLE, RENAME, CREATE VIEW, PROCEDURE, TRIGGER and SEQUENCE are
// rolled back by its DDL recovery log. Rather than track which is which
// per version, any cut group that is not transactional makes the node
// unsafe: it must be reseeded, never rejoin as a replica with a forked
// schema. No acknowledged DDL is lost by this: the cut group was never
// chosen, so its client never got an OK.
func NonTransactionalCut(plan Plan) error {
	if len(plan.CutNonTransactional) == 0 {
		return nil
	}
	return fmt.Errorf("%w: the cut removes %d DDL or non-transactional group(s) (%s) that MariaDB already applied and a binlog cut cannot undo; this node's data has diverged from the cluster: reseed it from a replica (binlogd reseed -config FILE, binlogd stopped)",
		ErrNonTransactionalCut, len(plan.CutNonTransactional), gtids(plan.CutNonTransactional))
}
