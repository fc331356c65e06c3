// Package connevict picks the connection a capped listener gives up to a
// newcomer: the oldest of the address holding the most evictable
// connections, so a flood from one address evicts its own first and
// another client's connection only when that client holds as many (on
// one address, as on loopback, simply the oldest). sqlproxy's and the
// replication endpoint's wire.Acceptor, binlogd's gRPC port and the
// HTTP ports (httpguard) share it.
package connevict
