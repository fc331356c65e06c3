// Package addrrate limits how often each source address may start
// something that costs the listener dearly before it knows who is
// calling: binlogd's gRPC port does the key exchange of a TLS handshake
// (ECDHE and a certificate signature, about 300 µs of CPU) for every
// ClientHello, so 5,000 of them a second from one stranger took 0.8-1.5
// of a core and starved the Paxos engine beside it (audit, December
// 2026). The listener asks Allow at accept, before any TLS work, and
// closes a connection Allow refuses (a few µs).
//
//	accept ──► exempt address? ──yes──► allow
//	              │ no
//	              ▼
//	   node-wide bucket: take a token (every non-exempt accept)
//	   address's bucket: take a token
//	              │
//	   address had a token ─────────────► allow
//	   no pressure (node-wide bucket ───► allow
//	   not run empty, or refilled to half since)
//	   otherwise ───────────────────────► refuse
//
// Two token buckets decide:
//
//  1. Each source address has its own (Rate a second, Burst at most): a
//     cluster's clients make a handful of connections, a reconnect storm
//     after a partition a few dozen, a flood thousands a second.
//  2. The node-wide bucket (PressureRate, PressureBurst) measures every
//     accept that is not exempt, refused ones included. Until it runs
//     empty the node is under no pressure and nobody is refused, so
//     normal operation never refuses anybody, however many connections
//     one address behind NAT makes. Once the node-wide rate of new
//     connections has outrun PressureRate, an address over its own
//     budget loses its connection, until the node-wide bucket has
//     refilled to half (PressureBurst/2 / PressureRate seconds of calm):
//     the tokens it refills during a flood are not the flood's to take.
//     The rate is the measure, not how full the handshakes' slots are: a
//     flood that abandons each handshake right after the server's first
//     flight costs the same key exchange but holds no slot.
//
// Addresses set with SetExempt (binlogd: its members' hosts) are never
// counted nor refused: a peer reconnecting all its links during a flood
// gets through, and so does one from behind the flood's own NAT.
//
// IPv6 addresses count by their /64, the block one host usually gets:
// per address, a single host could make 2^64 budgets. IPv4-mapped IPv6
// addresses count as the IPv4 address.
//
// Memory is bounded: at most MaxAddrs addresses have a bucket. When the
// table is full, buckets that have refilled (an idle address: dropping
// one loses nothing, a new bucket starts full) are dropped, at most once
// a second; if none has, a new address has no budget of its own and is
// refused under pressure (more than MaxAddrs addresses are flooding, and
// a newcomer cannot be told from them), allowed otherwise.
//
// The Limiter keeps no clock: callers pass the time, so tests step it.
package addrrate
