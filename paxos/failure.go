package paxos

// How a node that stopped itself says so. A storage failure (a wal write,
// sync or apply error: ErrStorage) stops the node at once, because what
// is on disk is unknown and an acceptor that answered from memory could
// forget a promise; the process around it must then take itself out of
// service (binlogd: health NOT_SERVING, no lease, MariaDB demoted), not
// keep looking healthy.

// Done is closed once the node has stopped: after Stop, or on its own
// after a fatal storage failure (then Err says why).
func (n *Node) Done() <-chan struct{} { return n.donec }

// Err returns why the node stopped on its own: an error wrapping
// ErrStorage. It is nil while the node runs and after a plain Stop.
func (n *Node) Err() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.fatal
}
