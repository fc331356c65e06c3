// Package httpguard holds the settings binlogd's and sqlproxy's HTTP
// ports (metrics, health, pprof, the proxy's backends page) share so
// that a local process holding idle sockets cannot take the daemon to
// its file limit, nor delay a scrape: a cap on connections open at once
// and deadlines on every phase of a connection, idle keep-alives
// included.
//
// Who may connect: anyone who reaches the port (loopback by default);
// what they may do: GET what the handler serves. What a stranger can
// hold is bounded:
//
//	accepted ──▶ waiting for a request header ──▶ serving a request ──▶ idle (kept alive)
//	              │ ReadHeaderTimeout (2 s)          WriteTimeout (60 s)     │ IdleTimeout (30 s)
//	              │ evictable at the cap ◀───────────────────────────────────┘ evictable again
//
// At MaxConns a newcomer evicts the connection waiting longest for a
// request header (CapListener); only a cap of connections serving requests
// refuses one. Without an IdleTimeout, net/http leaves a kept-alive
// connection with no deadline at all (ReadHeaderTimeout starts only once
// the next request's first byte arrives), so 50 idle connections stayed
// open for good.
package httpguard
