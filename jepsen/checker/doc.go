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
//	              acknowledged, real-time order of appends kept
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
