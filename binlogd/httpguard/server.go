package httpguard

import (
	"log/slog"
	"net"
	"net/http"
	"time"
)

const (
	// MaxConns caps the connections open at once. A scraper or an
	// operator's curl needs one; at the cap a newcomer takes the slot of
	// a connection waiting for a request header (Listener), so a flood
	// costs binlogd neither the descriptors its log and peers need nor
	// a scrape.
	MaxConns = 64
	// ReadHeaderTimeout bounds a request's headers: a new connection's
	// from its accept, a kept-alive one's from its next request's first
	// byte. A scraper or curl sends its header in one write at once; 2 s
	// let a stranger's silent connection hold a slot that long only,
	// when no newcomer needs it first.
	ReadHeaderTimeout = 2 * time.Second
	// IdleTimeout closes a kept-alive connection that sends no next
	// request, and one that never sends a first.
	IdleTimeout = 30 * time.Second
	// MaxHeaderBytes: these ports serve GETs with short headers.
	MaxHeaderBytes = 16 << 10
)

// WriteTimeout bounds a request from its headers to the end of its
// answer: a client that stops reading, or asks pprof for a day-long
// profile, must not hold one of the MaxConns slots for good (re-audit:
// 64 `heap?seconds=86400` requests kept /metrics down). pprof refuses a
// profile longer than this; its default is 30 s.
const WriteTimeout = 60 * time.Second

// Server is an http.Server for h with the package's deadlines; serve it
// on a CapListener (its ConnState hook tells the listener which
// connections serve a request).
func Server(h http.Handler) *http.Server {
	return &http.Server{
		ConnState:         connState,
		Handler:           h,
		ReadHeaderTimeout: ReadHeaderTimeout,
		ReadTimeout:       ReadHeaderTimeout + 5*time.Second,
		WriteTimeout:      WriteTimeout,
		IdleTimeout:       IdleTimeout,
		MaxHeaderBytes:    MaxHeaderBytes,
	}
}

// Listener caps l at MaxConns connections open at once (CapListener),
// log getting its warnings (nil: none).
func Listener(l net.Listener, log *slog.Logger) *CapListener {
	return newCapListener(l, MaxConns, log)
}
