// Package topology tells the proxy who the master is and whether this
// node may serve statements right now.
//
// View.LeaseDeadline is on this process's monotonic clock. Admin derives it
// from binlogd's Status as (time the request was sent) + lease_remaining_ns:
// binlogd measured the remaining lease when it built the reply, which is
// after the send, so the derived deadline is never later than binlogd's
// own. Only the master's own view is used to serve: a follower's view of
// the lease ends later than the master's (DESIGN.md, "Reads").
//
// A non-master proxy also keeps a read window (window.go): the master's
// lent share of its lease, during which the proxy may send straight to
// the master's MariaDB; sqlproxy/doc.go ("One hop") has why it is safe.
//
// When binlogd stops answering, the last view stays, so the deadline
// simply runs out and the proxy refuses statements: failing closed.
package topology
