package preflight

import (
	"fmt"
	"strings"
	"time"
)

// A setting phxgo's my.cnf (binlogd/mysqld writeConfig) relies on. The
// config's mysql_extra lines are written after phxgo's, so in my.cnf the
// last one wins: a line here can silently undo a guarantee.
type setting struct {
	keys []string          // the option and its aliases, normalized
	ok   func(string) bool // nil: any value is wrong (binlogd owns it)
	want string            // what phxgo sets, for the finding
	why  string
	sev  Status
}

func equalFold(want string) func(string) bool {
	return func(v string) bool { return strings.EqualFold(v, want) }
}

func isOn(v string) bool {
	switch strings.ToUpper(v) {
	case "", "1", "ON", "TRUE", "YES":
		return true
	}
	return false
}

var settings = []setting{
	{keys: []string{"sync_binlog"}, ok: equalFold("1"), want: "1", sev: Fail,
		why: "a transaction's binlog must be on disk before it is acknowledged, or a crashed master loses it"},
	{keys: []string{"innodb_flush_log_at_trx_commit"}, ok: equalFold("1"), want: "1", sev: Fail,
		why: "InnoDB must sync each commit, or recovery and the binlog disagree after a crash"},
	{keys: []string{"binlog_format"}, ok: equalFold("ROW"), want: "ROW", sev: Fail,
		why: "replicas must apply exactly the master's rows"},
	{keys: []string{"gtid_strict_mode"}, ok: isOn, want: "ON", sev: Fail,
		why: "the Paxos log orders transactions by GTID; strict mode refuses out-of-order ones"},
	{keys: []string{"gtid_domain_id"}, ok: equalFold("0"), want: "0", sev: Fail,
		why: "the whole cluster is one GTID domain"},
	{keys: []string{"log_slave_updates", "log_replica_updates"}, ok: isOn, want: "ON", sev: Fail,
		why: "a replica must write what it applies to its own binlog to become master"},
	{keys: []string{"log_bin", "log_bin_index", "log_basename"}, want: "binlog, binlog.index", sev: Fail,
		why: "binlogd and recovery read data/binlog.index"},
	{keys: []string{"read_only"}, ok: isOn, want: "ON", sev: Fail,
		why: "binlogd lifts read_only only on the node holding the master lease; a writable replica forks the data"},
	{keys: []string{"skip_slave_start", "skip_replica_start"}, ok: isOn, want: "ON", sev: Fail,
		why: "binlogd starts replication after recovery, never MariaDB on its own"},
	{keys: []string{"rpl_semi_sync_master_enabled", "rpl_semi_sync_slave_enabled", "rpl_semi_sync_replica_enabled"}, sev: Fail,
		want: "set by binlogd at run time",
		why:  "binlogd turns semi-sync on and off with the master lease"},
	{keys: []string{"rpl_semi_sync_master_wait_point"}, ok: equalFold("AFTER_SYNC"), want: "AFTER_SYNC", sev: Fail,
		why: "with AFTER_COMMIT others see a commit the log may still lose"},
	{keys: []string{"rpl_semi_sync_master_wait_no_slave"}, ok: isOn, want: "ON", sev: Fail,
		why: "commits must wait for binlogd's ACK even while it is not connected"},
	{keys: []string{"rpl_semi_sync_master_timeout"}, want: "18446744073709551615 (never)", sev: Fail,
		why: "a timeout commits transactions the log never acknowledged (the node then marks itself UNSAFE)"},
	{keys: []string{"enforce_storage_engine", "default_storage_engine", "storage_engine"}, ok: equalFold("InnoDB"), want: "InnoDB", sev: Fail,
		why: "a write to a non-transactional engine escapes the log's guarantee"},
	{keys: []string{"datadir", "socket", "port", "bind_address", "server_id", "pid_file", "log_error", "tmpdir", "user", "relay_log"},
		want: "written by binlogd from the config", sev: Fail,
		why: "binlogd derives it from mysql_dir, members[].mysql_addr and id and relies on the value it wrote"},
	{keys: []string{"secure_file_priv"}, ok: func(v string) bool { return v != "" }, want: "mysql_dir/files", sev: Fail,
		why: "empty lets SELECT ... INTO OUTFILE and LOAD_FILE reach any file mariadbd can"},
	{keys: []string{"secure_file_priv"}, ok: func(v string) bool { return v == "" }, want: "mysql_dir/files", sev: Warn,
		why: "phxgo confines file import and export to mysql_dir/files; another directory is yours to secure"},
	{keys: []string{"sql_mode"}, ok: func(v string) bool { return strings.Contains(strings.ToUpper(v), "NO_ENGINE_SUBSTITUTION") }, sev: Warn,
		want: "…,NO_ENGINE_SUBSTITUTION",
		why:  "without it CREATE TABLE ... ENGINE=MyISAM silently makes an InnoDB table instead of an error"},
	{keys: []string{"slave_parallel_threads", "replica_parallel_threads", "slave_parallel_workers", "replica_parallel_workers"}, sev: Warn,
		want: "replica_apply_threads in the config",
		why:  "binlogd writes it from replica_apply_threads; set that instead, so the config says what the server runs"},
	{keys: []string{"skip_name_resolve"}, ok: isOn, want: "ON", sev: Warn,
		why: "accounts are host '%'; name lookups only add DNS to every login"},
}

// extraLine is one mysql_extra line as my.cnf reads it.
type extraLine struct {
	raw, key, value string
}

// parseExtra reads one my.cnf line. skip-X, disable-X and enable-X are
// MariaDB's boolean prefixes; loose- only means "ignore if unknown".
// Comments, blank lines and section headers give ok=false.
func parseExtra(raw string) (extraLine, bool) {
	l := strings.TrimSpace(raw)
	if l == "" || l[0] == '#' || l[0] == ';' || l[0] == '[' {
		return extraLine{}, false
	}
	key, value, hasValue := strings.Cut(l, "=")
	key = strings.ReplaceAll(strings.ToLower(strings.TrimSpace(key)), "-", "_")
	value = strings.Trim(strings.TrimSpace(value), `"'`)
	key = strings.TrimPrefix(key, "loose_")
	switch {
	case strings.HasPrefix(key, "skip_") && !isKnown(key):
		key, value = strings.TrimPrefix(key, "skip_"), "OFF"
	case strings.HasPrefix(key, "disable_"):
		key, value = strings.TrimPrefix(key, "disable_"), "OFF"
	case strings.HasPrefix(key, "enable_"):
		key, value = strings.TrimPrefix(key, "enable_"), "ON"
	case !hasValue:
		value = "ON"
	}
	return extraLine{raw: raw, key: key, value: value}, true
}

// ExtraSetting is the value the mysql_extra lines give key (MariaDB's
// spelling with '_'; '-' and a loose- prefix are read alike), the last
// one winning as in my.cnf; ok false when no line sets it.
func ExtraSetting(extra []string, key string) (value string, ok bool) {
	for _, raw := range extra {
		if l, isSetting := parseExtra(raw); isSetting && l.key == key {
			value, ok = l.value, true
		}
	}
	return value, ok
}

// isKnown: key is itself a setting (skip_slave_start is an option, not
// "slave_start=OFF").
func isKnown(key string) bool {
	for _, s := range settings {
		for _, k := range s.keys {
			if k == key {
				return true
			}
		}
	}
	return false
}

// groupWaitKeys are the variables binlogd sets at run time while
// group_commit_wait is on (binlogd/node/groupwait.go).
var groupWaitKeys = []string{"binlog_commit_wait_count", "binlog_commit_wait_usec"}

// CheckMySQLExtra checks each mysql_extra line against the settings phxgo
// relies on. cfgPath names the file in the fix; groupWait is the config's
// group_commit_wait (0: binlogd leaves the group commit variables alone).
func CheckMySQLExtra(extra []string, cfgPath string, groupWait time.Duration) []Result {
	const name = "mysql_extra"
	var out []Result
	for _, raw := range extra {
		if t := strings.TrimSpace(raw); strings.HasPrefix(t, "!include") {
			out = append(out, warn(name, fmt.Sprintf("put the lines themselves in mysql_extra in %s instead of %q", cfgPath, t),
				"%q: the included file is not checked and may override what phxgo sets", t))
			continue
		}
		l, isSetting := parseExtra(raw)
		if !isSetting {
			continue
		}
		for _, s := range settings {
			if !contains(s.keys, l.key) || (s.ok != nil && s.ok(l.value)) {
				continue
			}
			out = append(out, Result{Check: name, Status: s.sev,
				Finding: fmt.Sprintf("%q overrides %s (phxgo: %s): %s", strings.TrimSpace(raw), l.key, s.want, s.why),
				Fix:     fmt.Sprintf("remove %q from mysql_extra in %s", strings.TrimSpace(raw), cfgPath)})
		}
		if l.key == "proxy_protocol_networks" {
			out = append(out, Result{Check: name, Status: Warn,
				Finding: fmt.Sprintf("%q: binlogd adds the members' addresses to these entries at run time; every address listed may name any client address to MariaDB, and so log in with the privileges of that address's account (sqlproxy's PROXY header)",
					strings.TrimSpace(raw)),
				Fix: fmt.Sprintf("remove %q from mysql_extra in %s unless a proxy dials from an address that is not a member's", strings.TrimSpace(raw), cfgPath)})
		}
		if groupWait > 0 && contains(groupWaitKeys, l.key) {
			out = append(out, Result{Check: name, Status: Warn,
				Finding: fmt.Sprintf("%q is overridden at run time: while group_commit_wait is on, binlogd sets %s itself (on the master both follow the load; a replica's count is 0)",
					strings.TrimSpace(raw), l.key),
				Fix: fmt.Sprintf("remove %q from mysql_extra in %s, or set \"group_commit_wait\": \"0s\" there to keep it", strings.TrimSpace(raw), cfgPath)})
		}
	}
	if len(out) == 0 {
		out = append(out, ok(name, "%d lines; none overrides a setting phxgo relies on", len(extra)))
	}
	return out
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
