// Package checker decides whether a recorded history (package history) is
// correct. Every checker is a pure function of the history; none talks to
// the cluster.
//
//	Register      linearizability of a read/write/CAS register per key, with
//	              porcupine (partitioned by key, bounded by a timeout that
//	              yields Unknown instead of hanging), optional HTML view
//	Bank          every ok read sees all accounts and the initial total, no
//	              negative balance
//	Set           the final read holds every ok add, no element twice,
//	              nothing never attempted and nothing that failed
//	Append        Elle-shaped list-append: reads of a key are prefixes of one
//	              another, no element twice, none lost after it was
//	              acknowledged, real-time order of appends kept; no aborted
//	              (G1a) or intermediate (G1b) read; and no cycle in the
//	              ww/wr/rw dependency graph (txngraph.go): G0, G1c, G2-item,
//	              found with Tarjan's SCC and the shortest cycle per kind
//	              (cycles.go). Replica reads (read/write-split port) are
//	              judged by everything except recency
//	Latency       (with -latency-bound) no operation waited longer than the
//	              bound while no fault was in place: a COMMIT blocked by a
//	              fault must be answered once it is healed
//	Availability  share of ok operations inside each fault window and the
//	              time from heal to the first ok operation after it
//
// Unknown (info) operations are treated as Jepsen does: an info write may
// take effect at any time after its invocation or never, so it is never
// required to be visible and never forbidden from being visible; info
// reads carry no information and are dropped.
//
// Validity is three-valued: "true", "false", or "unknown" (a checker could
// not decide, e.g. porcupine timed out or there was no final read). Combine
// folds them: any false is false, else any unknown is unknown.
package checker
