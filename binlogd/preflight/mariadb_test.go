package preflight

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestJudgeVersion(t *testing.T) {
	for _, c := range []struct {
		out  string
		want Status
	}{
		{"mariadbd  Ver 10.11.19-MariaDB-0+deb12u1 for debian-linux-gnu on x86_64 (Debian 12)", OK},
		{"/usr/sbin/mariadbd  Ver 10.11.6-MariaDB for Linux on x86_64 (MariaDB Server)", OK},
		{"mariadbd  Ver 10.6.18-MariaDB-0ubuntu0.22.04.1 for debian-linux-gnu on x86_64", Warn},
		{"mariadbd  Ver 11.4.2-MariaDB-ubu2404 for debian-linux-gnu on x86_64", Warn},
		{"mysqld  Ver 10.5.23-MariaDB-0+deb11u1 for debian-linux-gnu on x86_64", Fail},
		{"mysqld  Ver 10.3.39-MariaDB for Linux on x86_64", Fail},
		{"/usr/sbin/mysqld  Ver 8.0.36 for Linux on x86_64 (MySQL Community Server - GPL)", Fail},
		{"garbage", Fail},
	} {
		r := judgeVersion("/usr/sbin/mariadbd", c.out)
		if r.Status != c.want || (r.Status != OK && r.Fix == "") {
			t.Errorf("%q: got %s (%s), want %s", c.out, r.Status, r.Finding, c.want)
		}
	}
}

func TestCheckMariaDB(t *testing.T) {
	env := testEnv(t)
	rs := CheckMariaDB(context.Background(), env)
	want1(t, only(rs, "mariadb-install-db"), Fail, "not found", "apt-get install mariadb-server")
	want1(t, only(rs, "mariadbd"), Fail, "not found", "apt-get install")

	env.LookPath = func(f string) (string, error) {
		if f == "mariadbd" || f == "mariadb-install-db" {
			return "/usr/bin/" + f, nil
		}
		return "", errors.New("no")
	}
	env.Run = func(ctx context.Context, name string, args ...string) ([]byte, error) {
		if name != "/usr/bin/mariadbd" || len(args) != 1 || args[0] != "--version" {
			t.Fatalf("ran %s %v", name, args)
		}
		return []byte("mariadbd  Ver 10.11.19-MariaDB-0+deb12u1 for debian-linux-gnu on x86_64\n"), nil
	}
	rs = CheckMariaDB(context.Background(), env)
	want1(t, only(rs, "mariadb-install-db"), OK, "/usr/bin/mariadb-install-db", "")
	want1(t, only(rs, "mariadbd version"), OK, "10.11.19 (tested)", "")
}

func TestCheckMySQLExtra(t *testing.T) {
	for _, c := range []struct {
		line string
		want Status
	}{
		{"innodb_buffer_pool_size=256M", OK},
		{"# sync_binlog=0", OK},
		{"[mariadb]", OK},
		{"skip-slave-start", OK},
		{"sync_binlog=1", OK},
		{"gtid_strict_mode=1", OK},
		{"enforce_storage_engine=InnoDB", OK},
		{"local_infile=0", OK},
		{"sync_binlog=0", Fail},
		{"sync-binlog = 100", Fail},
		{"innodb_flush_log_at_trx_commit=2", Fail},
		{"binlog_format=MIXED", Fail},
		{"binlog-format=statement", Fail},
		{"gtid_strict_mode=OFF", Fail},
		{"loose-gtid-strict-mode=0", Fail},
		{"skip-log-slave-updates", Fail},
		{"log_slave_updates=0", Fail},
		{"skip-log-bin", Fail},
		{"log-bin=mysql-bin", Fail},
		{"read_only=OFF", Fail},
		{"skip-slave-start=0", Fail},
		{"rpl_semi_sync_master_enabled=ON", Fail},
		{"rpl_semi_sync_master_wait_point=AFTER_COMMIT", Fail},
		{"rpl_semi_sync_master_timeout=10000", Fail},
		{"rpl_semi_sync_master_wait_no_slave=OFF", Fail},
		{"enforce_storage_engine=MyISAM", Fail},
		{"default-storage-engine=Aria", Fail},
		{"port=3306", Fail},
		{"user=root", Fail},
		{"datadir=/var/lib/mysql", Fail},
		{"local_infile=ON", OK},
		{"secure_file_priv=", Fail},
		{"secure_file_priv=/var/tmp", Warn},
		{"sql_mode=STRICT_TRANS_TABLES", Warn},
		{"sql_mode=STRICT_TRANS_TABLES,NO_ENGINE_SUBSTITUTION", OK},
		{"skip_name_resolve=OFF", Warn},
		{"slave_parallel_threads=8", Warn},
		{"slave-parallel-mode=conservative", OK},
		{"!includedir /etc/mysql/conf.d", Warn},
		{"binlog_commit_wait_count=10", Warn},
		{"binlog-commit-wait-usec = 5000", Warn},
		{"loose-proxy-protocol-networks=10.9.0.0/16", Warn},
	} {
		rs := CheckMySQLExtra([]string{c.line}, "/etc/phxgo/binlogd.json", 10*time.Millisecond)
		if w := Worst(rs); w != c.want {
			t.Errorf("%q: got %s %+v, want %s", c.line, w, rs, c.want)
			continue
		}
		if c.want != OK && (len(rs) != 1 || rs[0].Fix == "") {
			t.Errorf("%q: want one result with a fix, got %+v", c.line, rs)
		}
	}
	for _, tc := range []struct {
		extra []string
		want  string
		ok    bool
	}{
		{nil, "", false},
		{[]string{"proxy_protocol_networks=10.0.0.0/8"}, "10.0.0.0/8", true},
		{[]string{"loose-proxy-protocol-networks = '10.0.0.1, ::1'", "# proxy_protocol_networks=x"}, "10.0.0.1, ::1", true},
		{[]string{"proxy_protocol_networks=a", "proxy-protocol-networks=b"}, "b", true}, // the last wins, as in my.cnf
	} {
		if v, ok := ExtraSetting(tc.extra, "proxy_protocol_networks"); v != tc.want || ok != tc.ok {
			t.Errorf("ExtraSetting(%q) = %q, %v; want %q, %v", tc.extra, v, ok, tc.want, tc.ok)
		}
	}
	rs := CheckMySQLExtra([]string{"sync_binlog=0"}, "/etc/phxgo/binlogd.json", 10*time.Millisecond)
	want1(t, rs, Fail, "sync_binlog", `remove "sync_binlog=0" from mysql_extra in /etc/phxgo/binlogd.json`)
	// With group_commit_wait "0s" the group commit lines are the operator's.
	rs = CheckMySQLExtra([]string{"binlog_commit_wait_count=10", "binlog_commit_wait_usec=5000"}, "/etc/phxgo/binlogd.json", 0)
	want1(t, rs, OK, "2 lines", "")
	rs = CheckMySQLExtra([]string{"binlog_commit_wait_count=10"}, "/etc/phxgo/binlogd.json", 10*time.Millisecond)
	want1(t, rs, Warn, "binlogd sets binlog_commit_wait_count itself", `set "group_commit_wait": "0s"`)
}
