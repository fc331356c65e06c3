package failover

import (
	"fmt"
	"strings"
	"time"
)

// Parts is one failover, each moment measured from the kill (0 = not
// seen). The parts follow one another: Detected <= Elected <= Applied
// <= Promoted <= FirstWrite.
type Parts struct {
	OldMaster, NewMaster uint32
	Lease                time.Duration // the cluster's lease duration
	Threads              int
	// Detected: a surviving node's view of the old master's lease ran out
	// (lease_remaining 0, no master, or it is campaigning).
	Detected time.Duration
	// Elected: a surviving node reports a new master (a later epoch).
	Elected time.Duration
	// Applied: the new master caught up: its MariaDB applied everything
	// valid in the log (mysql_gtid_pos reached last_valid_gtid).
	Applied time.Duration
	// Promoted: the new master reports role MASTER (its MariaDB made
	// durable and writable; binlogd serving).
	Promoted time.Duration
	// FirstWrite: the first INSERT invoked after the kill that a proxy
	// acknowledged.
	FirstWrite time.Duration
	// ServingLog: the new master's own "serving writes as master" log
	// line (0 if not found), a cross-check on Applied from binlogd's
	// clock instead of a 50 ms poll.
	ServingLog time.Duration
	// AcksBefore and AcksAfter count acknowledged inserts before the kill
	// and from it until the load stopped.
	AcksBefore, AcksAfter int64
}

// Measured reports what is missing, or nil when every part was seen.
func (p Parts) Measured() error {
	var miss []string
	for _, m := range []struct {
		name string
		d    time.Duration
	}{{"detection", p.Detected}, {"election", p.Elected}, {"apply", p.Applied}, {"promotion", p.Promoted}, {"first write", p.FirstWrite}} {
		if m.d <= 0 {
			miss = append(miss, m.name)
		}
	}
	if p.NewMaster == 0 || p.NewMaster == p.OldMaster {
		miss = append(miss, fmt.Sprintf("a new master (old %d, new %d)", p.OldMaster, p.NewMaster))
	}
	if len(miss) > 0 {
		return fmt.Errorf("%w: %s", ErrNotMeasured, strings.Join(miss, ", "))
	}
	return nil
}

// Ordered reports whether the moments follow one another.
func (p Parts) Ordered() bool {
	return p.Detected <= p.Elected && p.Elected <= p.Applied && p.Applied <= p.Promoted && p.Promoted <= p.FirstWrite
}

// Total is kill to first write served.
func (p Parts) Total() time.Duration { return p.FirstWrite }

// WithinTwoLeases is the target.
func (p Parts) WithinTwoLeases() bool { return p.FirstWrite > 0 && p.FirstWrite <= 2*p.Lease }

// String is a table: each part, its duration, the moment since the kill,
// and the total against the lease.
func (p Parts) String() string {
	var b strings.Builder
	ms := func(d time.Duration) string { return fmt.Sprintf("%7.0f ms", float64(d)/float64(time.Millisecond)) }
	fmt.Fprintf(&b, "failover of master %d -> %d under %d insert threads (lease %v)\n", p.OldMaster, p.NewMaster, p.Threads, p.Lease)
	fmt.Fprintf(&b, "  %-12s %s  (at %s)\n", "detection", ms(p.Detected), ms(p.Detected))
	fmt.Fprintf(&b, "  %-12s %s  (at %s)\n", "election", ms(p.Elected-p.Detected), ms(p.Elected))
	fmt.Fprintf(&b, "  %-12s %s  (at %s)\n", "apply", ms(p.Applied-p.Elected), ms(p.Applied))
	fmt.Fprintf(&b, "  %-12s %s  (at %s", "promotion", ms(p.Promoted-p.Applied), ms(p.Promoted))
	if p.ServingLog > 0 {
		fmt.Fprintf(&b, "; capture started, log: %s", strings.TrimSpace(ms(p.ServingLog)))
	}
	b.WriteString(")\n")
	fmt.Fprintf(&b, "  %-12s %s  (at %s)\n", "first write", ms(p.FirstWrite-p.Promoted), ms(p.FirstWrite))
	verdict := "within two leases"
	if !p.WithinTwoLeases() {
		verdict = "NOT within two leases"
	}
	fmt.Fprintf(&b, "  %-12s %s  = %.2f leases, %s; acks %d before, %d after the kill\n", "total", ms(p.Total()),
		float64(p.Total())/float64(p.Lease), verdict, p.AcksBefore, p.AcksAfter)
	return b.String()
}
