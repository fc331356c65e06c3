// Package paxos is phxgo's hand-rolled Multi-Paxos replicated log.
//
// (The helper that owns this package replaces this note with the design.)
package paxos
