// Package httpguard holds the settings binlogd's and sqlproxy's HTTP
// ports (metrics, health, pprof, the proxy's backends page) share so
// that a local process holding idle sockets cannot take the daemon to
// its file limit: a cap on connections open at once and deadlines on
// every phase of a connection, idle keep-alives included.
//
// Without an IdleTimeout, net/http leaves a kept-alive connection with
// no deadline at all (ReadHeaderTimeout starts only once a request's
// first byte arrives), so 50 idle connections stayed open for good.
package httpguard
