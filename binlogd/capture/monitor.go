package capture

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// monitor polls the master's semi-sync status until ctx ends and returns
// an ErrUnsafe error the first time MariaDB could have committed without
// capture's ACK: Rpl_semi_sync_master_status OFF (a timeout, or semi-sync
// disabled) or Rpl_semi_sync_master_no_tx above its value at start (a
// commit that did not wait, e.g. its session was killed while waiting).
// Query failures are not verdicts: the stream notices a dead server.
func (c *Capture) monitor(ctx context.Context, db *sql.DB, base ssStatus) error {
	t := time.NewTicker(c.cfg.MonitorPeriod)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		qctx, cancel := context.WithTimeout(ctx, c.cfg.ConnectTimeout)
		st, err := semiSyncStatus(qctx, db)
		cancel()
		if err != nil {
			if ctx.Err() == nil {
				c.log.Debug("capture: semi-sync status poll failed", "err", err)
			}
			continue
		}
		if !st.on {
			return fmt.Errorf("%w: Rpl_semi_sync_master_status turned OFF (semi-sync disabled or timed out; commits no longer wait for the ACK)", ErrUnsafe)
		}
		if st.noTx < base.noTx { // FLUSH STATUS reset the counter
			base.noTx = st.noTx
		}
		if st.noTx > base.noTx {
			return fmt.Errorf("%w: Rpl_semi_sync_master_no_tx grew from %d to %d (a commit finished without the ACK)", ErrUnsafe, base.noTx, st.noTx)
		}
	}
}
