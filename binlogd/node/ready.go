package node

import (
	"context"
	"fmt"
	"time"

	"phxgo/binlogd/role"
	"phxgo/binlogd/sdnotify"
)

// notifyReady tells systemd (Type=notify) that the node is ready once it
// is a member of the log and its MariaDB either masters with a valid
// lease or replicates from this node's endpoint with both threads
// running; before that `systemctl start` keeps waiting, so a rolling
// restart that waits for each unit moves on only when the node serves
// again. It then keeps the unit's status line current, and says STOPPING
// when the node begins to stop.
func (n *Node) notifyReady(ctx context.Context) {
	sd := sdnotify.FromEnv()
	if !sd.Enabled() {
		return
	}
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	ready, last := false, ""
	for {
		select {
		case <-ctx.Done():
			_ = sd.Stopping("stopping: fencing if master, then stopping MariaDB safely")
			return
		case <-t.C:
		}
		ok, status := n.readiness(ctx)
		switch {
		case ok && !ready:
			if err := sd.Ready(status); err != nil {
				n.log.Warn("sd_notify READY failed", "err", err)
				continue
			}
			ready, last = true, status
			n.log.Info("ready (told systemd)", "status", status)
		case status != last:
			_ = sd.Status(status)
			last = status
		}
	}
}

// readiness says whether the node serves, and a one-line status.
func (n *Node) readiness(ctx context.Context) (bool, string) {
	if r := n.unsafe.Load(); r != nil {
		return false, "UNSAFE: " + *r
	}
	if !n.isMember() {
		return false, "waiting to become a member of the log"
	}
	if n.witness() {
		return true, fmt.Sprintf("witness, master %d, applied index %d", n.lease.State().Master, n.px.Status().Applied)
	}
	db := n.conn()
	if db == nil || !n.mysqlUp.Load() && n.cfg.SuperviseMySQL {
		return false, "waiting for MariaDB"
	}
	ls := n.lease.Status()
	if n.serving() {
		return true, fmt.Sprintf("master, epoch %d", ls.State.Epoch)
	}
	qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	st, err := role.ReplicaStatus(qctx, db)
	cancel()
	if err != nil {
		return false, "replica status: " + err.Error()
	}
	if st.IORunning == "Yes" && st.SQLRunning == "Yes" {
		return true, fmt.Sprintf("replica of master %d, applied %s", ls.State.Master, n.applied.Load())
	}
	return false, "waiting for replication: " + st.String()
}
