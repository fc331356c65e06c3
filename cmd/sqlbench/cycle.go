package main

import (
	"fmt"
	"io"
)

// printCommitCycle shows where the closed-loop inserts' commit cycles
// went (issue 19.2), from the master's own counters: how many
// transactions each binlog group commit held, how often one came, and
// how long a transaction waited for its semi-sync ACK. For phxgo also
// capture's split of the cycle: the log's part (propose to durable, per
// batch), and how batches reached capture: overlapped (MariaDB sent the
// next group while an earlier one was in flight) or starved (nothing was
// in flight; the wait from the last ACK to its first transaction is
// MariaDB's turnaround, outside binlogd's own work, though it includes
// the binlog_commit_wait binlogd sets while master). Measured here,
// MariaDB mostly wrote the next group only after the previous one's ACK
// (most batches starved), so a cycle is about the ACK wait plus the
// turnaround, and a longer ACK delays the next group's commits too.
func printCommitCycle(w io.Writer, r results) {
	var lines []string
	for _, thr := range r.threads(testInsert) {
		for _, l := range labelOrder {
			x, ok := r.get(l, testInsert, thr)
			groups := x.Server[masterKey("Binlog_group_commits")]
			if !ok || groups <= 0 {
				continue
			}
			line := fmt.Sprintf("%-21s %4d %9.2f %9.2f %9.2f", l, thr,
				ratio(x.Server[masterKey("Binlog_commits")], groups),
				1000*ratio(x.RunS, groups),
				ratio(x.Server[masterKey("Rpl_semi_sync_master_tx_wait_time")], 1000*x.Server[masterKey("Rpl_semi_sync_master_tx_waits")]))
			m := x.Binlogd
			if b := m["phxgo_capture_batches_total"]; b > 0 {
				line += fmt.Sprintf(" %9.2f %8.0f%% %8.0f%% %10.2f",
					1000*ratio(m["phxgo_capture_propose_to_durable_seconds_total"], b),
					100*ratio(m["phxgo_capture_overlapped_batches_total"], b),
					100*ratio(m["phxgo_capture_starved_batches_total"], b),
					1000*ratio(m["phxgo_capture_starved_seconds_total"], m["phxgo_capture_starved_batches_total"]))
			}
			lines = append(lines, line)
		}
	}
	if len(lines) == 0 {
		return
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "oltp_insert commit cycle, on the master: txns per binlog group commit, ms between group commits, semi-sync wait ms per txn;")
	fmt.Fprintln(w, "phxgo's capture: the log's ms per batch (propose to durable), batches that came while another was in flight (overlapped)")
	fmt.Fprintln(w, "or with nothing in flight (starved), and a starved batch's ms since the last ACK (MariaDB's turnaround)")
	fmt.Fprintf(w, "%-21s %4s %9s %9s %9s %9s %9s %9s %10s\n", "system", "thr", "txn/grp", "grp_ms", "wait_ms", "log_ms", "overlap", "starved", "turn_ms")
	for _, l := range lines {
		fmt.Fprintln(w, l)
	}
}
