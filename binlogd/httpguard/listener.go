package httpguard

import (
	"container/list"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"phxgo/internal/connevict"
)

// evictLogEvery spaces the warnings about evictions and refusals.
const evictLogEvery = 30 * time.Second

// CapListener is a net.Listener capped at MaxConns connections open at
// once. At the cap a newcomer takes the slot of a connection that is
// not serving a request (waiting for a request header, the first or the
// next of a keep-alive): the one waiting the longest, of the address
// holding the most such (a flood from one address evicts its own
// first). Only when every slot serves a request is the newcomer refused
// (closed at once).
//
// A plain cap that makes Accept wait (netutil.LimitListener) let 200
// silent connections a second keep a scrape in the accept queue: it was
// answered after 8 s, when ReadHeaderTimeout had freed enough slots for
// everything queued before it (audit, December 2026). Evicting instead,
// as binlogd's gRPC port and the MySQL ports do, bounds the wait by the
// scrape's own request time: a flood must send a whole cap of
// connections while the scrape's request is on its way to take its
// slot.
//
// The server must be Server's: its ConnState hook tells the listener
// when a connection starts and ends a request.
type CapListener struct {
	net.Listener
	max int
	log *slog.Logger

	evicted, refused atomic.Uint64

	mu       sync.Mutex
	open     int
	waiting  list.List // *conn not serving a request, longest waiting first
	lastWarn time.Time
}

// conn is one accepted connection.
type conn struct {
	net.Conn
	l    *CapListener
	host string // the remote address's host

	// Guarded by l.mu.
	elem    *list.Element // in l.waiting while not serving a request
	counted bool          // holds one of l.open: not closed, not evicted
}

// newCapListener caps l at max connections open at once; log, when
// set, gets a warning per evictLogEvery while it evicts or refuses.
func newCapListener(l net.Listener, max int, log *slog.Logger) *CapListener {
	return &CapListener{Listener: l, max: max, log: log}
}

func (l *CapListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		nc := &conn{Conn: c, l: l, host: connevict.Host(c.RemoteAddr())}
		var victim *conn
		l.mu.Lock()
		if l.open >= l.max {
			e := l.evictee()
			if e == nil { // every slot serves a request: refuse
				l.mu.Unlock()
				l.refused.Add(1)
				l.warn("HTTP port at its cap of connections, all serving requests: refused a new one", "cap", l.max, "remote", c.RemoteAddr().String())
				_ = c.Close()
				continue
			}
			victim = e.Value.(*conn)
			l.waiting.Remove(e)
			victim.elem, victim.counted = nil, false
			l.open--
		}
		l.open++
		nc.counted = true
		nc.elem = l.waiting.PushBack(nc)
		l.mu.Unlock()
		if victim != nil {
			l.evicted.Add(1)
			l.warn("HTTP port at its cap of connections: closed the one waiting longest for a request header", "cap", l.max, "closed", victim.RemoteAddr().String())
			_ = victim.Conn.Close() // its server goroutine's read fails; its Close then finds it uncounted
		}
		return nc, nil
	}
}

// evictee is the element of l.waiting that gives up its slot: the one
// waiting longest of the host holding the most waiting connections (on
// one host, as on loopback, simply the longest waiting). nil when none
// waits. l.mu is held.
func (l *CapListener) evictee() *list.Element {
	return connevict.Oldest(&l.waiting, func(c *conn) string { return c.host })
}

// connState is Server's ConnState hook: a connection that has read a
// whole request header (StateActive) or was hijacked cannot be evicted;
// one done with its request (StateIdle) can again, as the newest.
func connState(c net.Conn, s http.ConnState) {
	gc, ok := c.(*conn)
	if !ok {
		return
	}
	l := gc.l
	l.mu.Lock()
	defer l.mu.Unlock()
	switch s {
	case http.StateActive, http.StateHijacked:
		if gc.elem != nil {
			l.waiting.Remove(gc.elem)
			gc.elem = nil
		}
	case http.StateIdle:
		if gc.elem == nil && gc.counted {
			gc.elem = l.waiting.PushBack(gc)
		}
	}
}

func (c *conn) Close() error {
	c.l.mu.Lock()
	if c.elem != nil {
		c.l.waiting.Remove(c.elem)
		c.elem = nil
	}
	if c.counted {
		c.counted = false
		c.l.open--
	}
	c.l.mu.Unlock()
	return c.Conn.Close()
}

func (l *CapListener) warn(msg string, args ...any) {
	if l.log == nil {
		return
	}
	now := time.Now()
	l.mu.Lock()
	quiet := now.Sub(l.lastWarn) < evictLogEvery
	if !quiet {
		l.lastWarn = now
	}
	l.mu.Unlock()
	if !quiet {
		l.log.Warn(msg, args...)
	}
}

// Collectors are l's counters for a registry, named prefix +
// "_http_conns_evicted_total" and "_http_conns_refused_total" (prefix
// e.g. "phxgo_binlogd").
func (l *CapListener) Collectors(prefix string) []prometheus.Collector {
	return []prometheus.Collector{
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: prefix + "_http_conns_evicted_total",
			Help: "HTTP connections closed while waiting for a request header, to make room for a newcomer at the cap: a flood of idle connections"},
			func() float64 { return float64(l.evicted.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: prefix + "_http_conns_refused_total",
			Help: "HTTP connections refused because every slot was serving a request"},
			func() float64 { return float64(l.refused.Load()) }),
	}
}
