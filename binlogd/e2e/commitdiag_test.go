package e2e

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"phxgo/binlogd/localcluster"
)

// logCommitDiag logs what tells apart the ways a commit can return while
// every other binlogd is stopped: a stop that did not take (process state
// not T), another semi-sync client (clients > 1, a Binlog Dump thread
// that is not capture's), semi-sync switched off or skipped
// (status OFF, no_tx, off_times), or an ACK from capture (get_ack,
// phxgo_binlogd_semisync_acks_total) for a batch the master's log claims
// chosen (chosen/applied index, last valid GTID, against gtid_binlog_pos).
// It only logs: it runs when the test is about to fail.
func logCommitDiag(t *testing.T, c *localcluster.Cluster, root *sql.DB, master uint32) {
	t.Helper()
	for _, id := range c.IDs() {
		pid := c.Pid(id, "binlogd")
		st, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		state := "?"
		if f := strings.Fields(string(st)); len(f) > 2 {
			state = f[2]
		}
		t.Logf("diag: node %d binlogd pid %d state %s", id, pid, state)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if rows, err := root.QueryContext(ctx, "SHOW GLOBAL STATUS LIKE 'Rpl_semi_sync_master%'"); err != nil {
		t.Logf("diag: semi-sync status: %v", err)
	} else {
		var kv []string
		for rows.Next() {
			var k, v string
			if rows.Scan(&k, &v) == nil {
				kv = append(kv, strings.TrimPrefix(k, "Rpl_semi_sync_master_")+"="+v)
			}
		}
		rows.Close()
		t.Logf("diag: master %d semi-sync: %s", master, strings.Join(kv, " "))
	}
	var binlogPos, file string
	var pos int64
	_ = root.QueryRowContext(ctx, "SELECT @@gtid_binlog_pos").Scan(&binlogPos)
	if rows, err := root.QueryContext(ctx, "SHOW MASTER STATUS"); err == nil {
		cols, _ := rows.Columns()
		if rows.Next() {
			dst := make([]any, len(cols))
			for i := range dst {
				dst[i] = new(sql.RawBytes)
			}
			dst[0], dst[1] = &file, &pos
			_ = rows.Scan(dst...)
		}
		rows.Close()
	}
	t.Logf("diag: master %d gtid_binlog_pos %s binlog end %s:%d", master, binlogPos, file, pos)
	if rows, err := root.QueryContext(ctx, "SELECT ID, USER, COMMAND, STATE, TIME FROM information_schema.PROCESSLIST WHERE COMMAND LIKE 'Binlog Dump%' OR STATE LIKE '%semi-sync%'"); err == nil {
		for rows.Next() {
			var id, tm int64
			var user, cmd string
			var state sql.NullString
			if rows.Scan(&id, &user, &cmd, &state, &tm) == nil {
				t.Logf("diag: master %d thread %d user %s %s %q %ds", master, id, user, cmd, state.String, tm)
			}
		}
		rows.Close()
	}
	if st, err := c.Status(ctx, master); err != nil {
		t.Logf("diag: master %d status: %v", master, err)
	} else {
		t.Logf("diag: master %d role %v ready %v paxos leader %d chosen %d applied %d last valid %s lease left %v unsafe %q",
			master, st.Role, st.Ready, st.PaxosLeader, st.ChosenIndex, st.AppliedIndex, st.LastValidGtid,
			time.Duration(st.LeaseRemainingNs), st.UnsafeReason)
	}
	hc := http.Client{Timeout: 5 * time.Second}
	resp, err := hc.Get("http://" + c.HTTPAddr(master) + "/metrics")
	if err != nil {
		t.Logf("diag: master %d metrics: %v", master, err)
		return
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		l := sc.Text()
		for _, p := range []string{"phxgo_binlogd_semisync_acks_total", "phxgo_binlogd_captured_transactions_total",
			"phxgo_capture_", "phxgo_paxos_values_proposed_total", "phxgo_paxos_chosen", "phxgo_paxos_leader"} {
			if strings.HasPrefix(l, p) {
				t.Logf("diag: master %d %s", master, l)
				break
			}
		}
	}
}

// awaitStopped waits until every thread of pid is stopped (state T): a
// SIGSTOP is delivered to each thread on its way back to user space, so
// one busy in a syscall (a wal fsync) may still finish it and send what
// it wrote. The test's premise, no majority, holds only from then on.
func awaitStopped(t *testing.T, pid int) {
	t.Helper()
	start := time.Now()
	for polls := 0; ; polls++ {
		running := ""
		tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
		for _, task := range tasks {
			st, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/stat", pid, task.Name()))
			if err != nil {
				continue // the thread exited
			}
			// The state follows the ")" closing the command name.
			if _, rest, ok := strings.Cut(string(st), ") "); ok && len(rest) > 0 && rest[0] != 'T' && rest[0] != 't' {
				running += fmt.Sprintf(" %s:%c", task.Name(), rest[0])
			}
		}
		if len(tasks) > 0 && running == "" {
			if polls > 0 {
				t.Logf("diag: pid %d fully stopped after %v", pid, time.Since(start))
			}
			return
		}
		if time.Since(start) > 10*time.Second {
			t.Fatalf("pid %d not stopped 10s after SIGSTOP; threads not stopped:%s", pid, running)
		}
		time.Sleep(time.Millisecond)
	}
}
