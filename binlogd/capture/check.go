package capture

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"phxgo/binlogd/binlog"
)

// CheckServer verifies that the MariaDB behind db is configured so that a
// commit is acknowledged only after capture's ACK (DESIGN.md, "Write
// path"). It returns an error wrapping ErrBadSettings that names every
// wrong variable, or a query error.
func CheckServer(ctx context.Context, db *sql.DB) error { return checkServer(ctx, db, true) }

// CheckSettings is CheckServer for a server that is not master (yet):
// every durability and GTID setting, but semi-sync itself may be OFF (it
// is turned on when the node becomes master). binlogd runs it at every
// MariaDB start and refuses to use a wrongly configured server.
func CheckSettings(ctx context.Context, db *sql.DB) error { return checkServer(ctx, db, false) }

func checkServer(ctx context.Context, db *sql.DB, asMaster bool) error {
	var (
		syncBinlog, flushAtCommit, ssEnabled, ssNoSlave, strict, slaveUpd, logBin, compress int64
		waitPoint, format, checksum, binlogPos                                              string
		timeout, domainID                                                                   uint64
	)
	err := db.QueryRowContext(ctx, `SELECT @@sync_binlog, @@innodb_flush_log_at_trx_commit,
		@@rpl_semi_sync_master_enabled, @@rpl_semi_sync_master_wait_no_slave,
		@@gtid_strict_mode, @@log_slave_updates, @@log_bin,
		@@rpl_semi_sync_master_wait_point, @@binlog_format, @@binlog_checksum,
		@@gtid_binlog_pos, @@rpl_semi_sync_master_timeout, @@gtid_domain_id, @@log_bin_compress`).Scan(
		&syncBinlog, &flushAtCommit, &ssEnabled, &ssNoSlave, &strict, &slaveUpd, &logBin,
		&waitPoint, &format, &checksum, &binlogPos, &timeout, &domainID, &compress)
	if err != nil {
		return fmt.Errorf("capture: read server settings: %w", err)
	}
	var maxTimeout uint64
	err = db.QueryRowContext(ctx, `SELECT NUMERIC_MAX_VALUE FROM information_schema.SYSTEM_VARIABLES
		WHERE VARIABLE_NAME='RPL_SEMI_SYNC_MASTER_TIMEOUT'`).Scan(&maxTimeout)
	if err != nil {
		return fmt.Errorf("capture: read rpl_semi_sync_master_timeout range: %w", err)
	}
	status, err := semiSyncStatus(ctx, db)
	if err != nil {
		return err
	}

	var bad []string
	want := func(ok bool, name string, got any, wanted string) {
		if !ok {
			bad = append(bad, fmt.Sprintf("%s=%v (want %s)", name, got, wanted))
		}
	}
	onOff := func(v int64) string {
		if v != 0 {
			return "ON"
		}
		return "OFF"
	}
	want(logBin == 1, "log_bin", onOff(logBin), "ON")
	want(syncBinlog == 1, "sync_binlog", syncBinlog, "1")
	want(flushAtCommit == 1, "innodb_flush_log_at_trx_commit", flushAtCommit, "1")
	if asMaster {
		want(ssEnabled == 1, "rpl_semi_sync_master_enabled", onOff(ssEnabled), "ON")
	}
	want(strings.EqualFold(waitPoint, "AFTER_SYNC"), "rpl_semi_sync_master_wait_point", waitPoint, "AFTER_SYNC")
	want(ssNoSlave == 1, "rpl_semi_sync_master_wait_no_slave", onOff(ssNoSlave), "ON")
	want(timeout >= maxTimeout, "rpl_semi_sync_master_timeout", timeout, fmt.Sprint(maxTimeout, " (the maximum)"))
	want(strict == 1, "gtid_strict_mode", onOff(strict), "ON")
	want(slaveUpd == 1, "log_slave_updates", onOff(slaveUpd), "ON")
	want(strings.EqualFold(format, "ROW"), "binlog_format", format, "ROW")
	want(strings.EqualFold(checksum, "CRC32"), "binlog_checksum", checksum, "CRC32")
	want(compress == 0, "log_bin_compress", onOff(compress), "OFF")
	want(status.noTx == 0, "Rpl_semi_sync_master_no_tx", status.noTx, "0 (a commit already finished without an ACK since mariadbd started)")
	if ssEnabled == 1 {
		want(status.on, "Rpl_semi_sync_master_status", onOff(b2i(status.on)), "ON (it went OFF: a commit may have skipped the ACK)")
	}
	l, err := binlog.ParseGTIDList(binlogPos)
	switch {
	case err != nil:
		bad = append(bad, fmt.Sprintf("gtid_binlog_pos=%q (unparsable: %v)", binlogPos, err))
	case len(l) > 1:
		bad = append(bad, fmt.Sprintf("gtid_binlog_pos=%q (want a single GTID domain)", binlogPos))
	case len(l) == 1 && uint64(l[0].Domain) != domainID:
		bad = append(bad, fmt.Sprintf("gtid_domain_id=%d (the binlog holds domain %d; a second domain is refused)", domainID, l[0].Domain))
	}
	if len(bad) > 0 {
		return fmt.Errorf("%w: %s", ErrBadSettings, strings.Join(bad, "; "))
	}
	return nil
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

type ssStatus struct {
	on   bool   // Rpl_semi_sync_master_status
	noTx uint64 // Rpl_semi_sync_master_no_tx
}

func semiSyncStatus(ctx context.Context, db *sql.DB) (ssStatus, error) {
	rows, err := db.QueryContext(ctx, `SHOW GLOBAL STATUS WHERE Variable_name IN
		('Rpl_semi_sync_master_status', 'Rpl_semi_sync_master_no_tx')`)
	if err != nil {
		return ssStatus{}, fmt.Errorf("capture: read semi-sync status: %w", err)
	}
	defer rows.Close()
	var st ssStatus
	n := 0
	for rows.Next() {
		var name, val string
		if err := rows.Scan(&name, &val); err != nil {
			return ssStatus{}, fmt.Errorf("capture: read semi-sync status: %w", err)
		}
		switch strings.ToLower(name) {
		case "rpl_semi_sync_master_status":
			st.on = strings.EqualFold(val, "ON")
			n++
		case "rpl_semi_sync_master_no_tx":
			if _, err := fmt.Sscan(val, &st.noTx); err != nil {
				return ssStatus{}, fmt.Errorf("capture: Rpl_semi_sync_master_no_tx=%q: %w", val, err)
			}
			n++
		}
	}
	if err := rows.Err(); err != nil {
		return ssStatus{}, fmt.Errorf("capture: read semi-sync status: %w", err)
	}
	if n != 2 {
		return ssStatus{}, fmt.Errorf("%w: semi-sync status variables missing (is this MariaDB >= 10.3?)", ErrBadSettings)
	}
	return st, nil
}
