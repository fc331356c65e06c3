// Package topology tells the proxy who the master is and whether this
// node may serve statements right now.
//
// Admin follows the local binlogd's status on the Admin.WatchStatus
// stream (binlogd pushes it on every change and once a second; a stream
// silent for three seconds is opened again; a binlogd without the RPC is
// polled with Admin.Status every interval). The status gives the master,
// the members and whether this node is the ready master, but never a
// deadline: a pushed message's age is unknown to the reader.
//
// Deadlines come only from read windows (window.go), asked with
// Admin.ReadWindow: t0 is read before the request, the master grants w
// (measured after it received the request), and the window ends at
// t0 + w - m on this process's monotonic clock (m: the lease's drift
// margin). On a non-master node the window lets the proxy send straight
// to the master's MariaDB; on the master node it is the proxy's own
// lease (View.LeaseDeadline). The master's binlogd waits every window it
// granted out before it ends its term early (Fence, switchover), and a
// window ends before the master's lease does; sqlproxy/doc.go ("One hop")
// has the argument.
//
// When binlogd stops answering, the last view stays and the window simply
// runs out: the proxy then refuses statements (failing closed) or, on a
// non-master node, forwards to the master's proxy.
package topology
