package httpguard

import (
	"net"
	"net/http"
	"time"

	"golang.org/x/net/netutil"
)

const (
	// MaxConns caps the connections open at once. A scraper or an
	// operator's curl needs one; past the cap, Accept waits for one to
	// end, so a flood delays the metrics rather than costing binlogd the
	// descriptors its log and peers need.
	MaxConns = 64
	// ReadHeaderTimeout bounds a request's headers once its first byte is
	// in.
	ReadHeaderTimeout = 5 * time.Second
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

// Server is an http.Server for h with the package's deadlines.
func Server(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: ReadHeaderTimeout,
		ReadTimeout:       ReadHeaderTimeout + 5*time.Second,
		WriteTimeout:      WriteTimeout,
		IdleTimeout:       IdleTimeout,
		MaxHeaderBytes:    MaxHeaderBytes,
	}
}

// Listener caps l at MaxConns connections open at once.
func Listener(l net.Listener) net.Listener { return netutil.LimitListener(l, MaxConns) }
