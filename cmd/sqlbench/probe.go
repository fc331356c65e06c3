package main

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
)

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat's times: 100 on
// every Linux architecture Go supports.
const clockTicks = 100

// snapshot is every counter a run reads before sysbench starts and again
// after the replicas caught up; the run reports the differences.
type snapshot struct {
	cpuTicks map[string]int64   // process kind -> utime+stime of its pids
	server   map[string]float64 // MariaDB status summed over servers
	metrics  map[string]float64 // binlogd /metrics summed over nodes
	busy     int64              // machine busy ticks (/proc/stat)
	total    int64              // machine ticks
}

// The MariaDB counters a run reads. Innodb_data_fsyncs counts every InnoDB
// fsync (redo log and data files); Syncs counts the server's other
// my_sync() calls (binlog, relay log, Aria), so their sum is the server's
// disk flushes.
var serverCounters = []string{"Innodb_data_fsyncs", "Syncs", "Binlog_group_commits", "Binlog_commits"}

// masterCounters are also kept for the master alone, as "master:NAME":
// its commit groups and its semi-sync waits (issue 19.2, the commit
// cycle). The replicas' binlog group commits (log_slave_updates) would
// blur the sums.
var masterCounters = []string{"Binlog_group_commits", "Binlog_commits",
	"Rpl_semi_sync_master_tx_wait_time", "Rpl_semi_sync_master_tx_waits"}

// masterKey names a master-only counter in a snapshot or record.
func masterKey(name string) string { return "master:" + name }

// openDB opens a connection pool to a MariaDB at addr as user.
func openDB(addr, user, pass string) (*sql.DB, error) {
	c := mysql.NewConfig()
	c.User, c.Passwd, c.Net, c.Addr = user, pass, "tcp", addr
	c.Timeout, c.ReadTimeout = 5*time.Second, time.Minute
	conn, err := mysql.NewConnector(c)
	if err != nil {
		return nil, err
	}
	db := sql.OpenDB(conn)
	db.SetMaxOpenConns(2)
	return db, nil
}

func serverStatus(ctx context.Context, db *sql.DB) (map[string]float64, error) {
	names := append(slices.Clone(serverCounters), masterCounters...)
	q := "SHOW GLOBAL STATUS WHERE Variable_name IN ('" + strings.Join(names, "','") + "')"
	rows, err := db.QueryContext(ctx, q)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]float64{}
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return nil, err
		}
		out[k], _ = strconv.ParseFloat(v, 64)
	}
	return out, rows.Err()
}

func fetchMetrics(ctx context.Context, url string) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", url, resp.Status)
	}
	return parseMetrics(resp.Body)
}

// machineTicks reads the "cpu" line of /proc/stat: busy (user, nice,
// system, irq, softirq, steal) and total ticks.
func machineTicks() (busy, total int64, err error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0, 0, fmt.Errorf("%w: /proc/stat: %q", errBadProcStat, line)
	}
	for k, s := range f[1:9] {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("%w: /proc/stat: %q", errBadProcStat, line)
		}
		total += v
		if k != 3 && k != 4 { // idle, iowait
			busy += v
		}
	}
	return busy, total, nil
}

// take reads every counter; dbs[0] is the master. A pid that is gone counts 0 (its CPU is lost
// to the figure; a run during which a process restarts says so in its log).
func take(ctx context.Context, pids map[string][]int, dbs []*sql.DB, metricURLs []string) (snapshot, error) {
	s := snapshot{cpuTicks: map[string]int64{}, server: map[string]float64{}, metrics: map[string]float64{}}
	for kind, ps := range pids {
		for _, p := range ps {
			b, err := os.ReadFile("/proc/" + strconv.Itoa(p) + "/stat")
			if err != nil {
				continue
			}
			t, err := procCPUTicks(string(b))
			if err != nil {
				return s, err
			}
			s.cpuTicks[kind] += t
		}
	}
	for i, db := range dbs {
		st, err := serverStatus(ctx, db)
		if err != nil {
			return s, err
		}
		for _, k := range serverCounters {
			s.server[k] += st[k]
		}
		if i == 0 { // the master
			for _, k := range masterCounters {
				s.server[masterKey(k)] = st[k]
			}
		}
	}
	for _, u := range metricURLs {
		m, err := fetchMetrics(ctx, u)
		if err != nil {
			return s, err
		}
		for k, v := range m {
			s.metrics[k] += v
		}
	}
	var err error
	s.busy, s.total, err = machineTicks()
	return s, err
}
