// Package events is binlogd's record of what happened to a node that an
// operator wants to hear about: role changes, failovers and switchovers,
// fences, membership changes, recovery cuts, UNSAFE and RESEED states.
//
//	node code ──Publish──► Bus ──► slog (one line per event)
//	                        │ ├──► ring (the last RingSize events)
//	                        │ ├──► subscribers (Admin/Events streams)
//	                        │ └──► hook queue ──► Hook: one command per event,
//	                        │                      the event as JSON on stdin
//	                        └──► metrics (events by kind, drops, hook results)
//
// Publish never blocks on anything outside the Bus: a subscriber whose
// buffer is full is cut off (its stream ends with ErrSlowSubscriber; it
// can reconnect and read the ring again), and an event that finds the
// hook queue full is dropped and counted. The hook runs one event at a
// time, in publish order, each bounded by a timeout after which its whole
// process group is killed; its output is logged, its failure counted.
// A hook that hangs, fails or is slow therefore only delays or loses later
// hook runs, never the node.
//
// Invariant: Seq numbers increase by one per published event; a subscriber
// sees the ring's events then every later event, each once, in Seq order,
// with no gap (Subscribe snapshots the ring and registers under one lock).
package events
