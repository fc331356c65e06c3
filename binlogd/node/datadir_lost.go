package node

import (
	"context"

	"phxgo/binlogd/events"
)

// unrecoverableStarts is how many starts in a row must find a datadir
// InnoDB cannot recover before the node gives it up: one more start
// costs seconds and rules out a failure of one attempt's own making.
const unrecoverableStarts = 2

// DatadirLostReason starts the UNSAFE reason of a node whose datadir
// cannot be recovered (tools match it to tell it from other reasons).
const DatadirLostReason = "MariaDB's datadir cannot be recovered: "

// giveUpDatadir stops restarting a mariadbd whose InnoDB cannot recover
// its files (mysqld.ErrUnrecoverable): every start would fail alike. The
// node goes UNSAFE and reports reseed_needed; its binlogd stays up, so
// its Paxos log keeps voting and serving peers (it is separate from the
// lost datadir and intact). Nothing acknowledged is lost: every
// transaction this MariaDB held that the log chose is on a majority, and
// `binlogd reseed` (binlogd stopped) replaces the datadir with a
// replica's copy, keeping the old one beside it for a post-mortem.
func (n *Node) giveUpDatadir(ctx context.Context, err error) {
	n.datadirLost.Store(true)
	n.setUnsafe(DatadirLostReason + err.Error() +
		"; stop binlogd, run `binlogd reseed -config <this node's binlogd.json>` (copies a replica's datadir), start binlogd")
	n.publish(events.Reseed, "reason", "datadir unrecoverable", "err", err.Error())
	<-ctx.Done()
}
