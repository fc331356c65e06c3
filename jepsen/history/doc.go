// Package history records what the Jepsen clients did, one Op per operation.
//
// Unlike Jepsen's Clojure harness, which logs an :invoke and a completion
// event separately, an Op carries both times: Invoke is taken just before
// the request leaves the client, Complete just after the answer (or error)
// arrived. Times are nanoseconds on the recorder's monotonic clock.
//
// Outcome follows Jepsen:
//
//	ok    the operation happened, its Result is what the server returned
//	fail  the operation definitely did not happen (an error that proves it:
//	      a CAS whose WHERE matched nothing, a duplicate key, any error of an
//	      explicit transaction before COMMIT was sent)
//	info  unknown: it may have happened, at any time after Invoke, even
//	      after Complete (timeouts, dropped connections, errors on COMMIT)
//
// Invariant: Invoke <= Complete for every client Op.
//
// Fault windows of the nemesis are recorded in the same history as Ops with
// Process == NemesisProcess, F == "nemesis", Invoke = fault start and
// Complete = heal, so the availability checker needs nothing else.
//
// The Recorder streams every Op as one JSON line as soon as it completes, so
// a crashed run still leaves its history on disk.
package history
