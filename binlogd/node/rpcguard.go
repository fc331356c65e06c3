package node

import (
	"container/list"
	"log/slog"
	"net"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"phxgo/binlogd/rawnet"
)

// The gRPC port is the one meant to face the network, so a stranger's
// idle sockets must not cost binlogd its descriptors: gRPC's default
// gives a connection that never starts its TLS handshake 120 s, and
// 20,000 of them filled the file limit, after which status calls, peer
// links and any file the log opens would fail (audit, December 2026).
const (
	// rpcHandshakeTimeout bounds a new connection's TLS and HTTP/2
	// handshake; a peer on another continent needs well under a second.
	rpcHandshakeTimeout = 5 * time.Second
	// maxRPCConns caps the gRPC connections open at once, far above what
	// a cluster uses (a link per peer, one per proxy and admin command)
	// and far below a usual file limit.
	maxRPCConns = 2048
	// rpcEvictLogEvery spaces the warnings about evictions.
	rpcEvictLogEvery = 30 * time.Second
)

func rpcGuardOptions() []grpc.ServerOption {
	return []grpc.ServerOption{grpc.ConnectionTimeout(rpcHandshakeTimeout)}
}

// rpcListener is l capped at max connections open at once, each read
// and written raw (package rawnet: no sysmon wake-up per Paxos message).
//
// At the cap a new connection takes the slot of the oldest one still in
// its TLS handshake (of the address holding the most of them: evictee),
// which is closed; only a cap of connections past
// their handshake refuses the newcomer (closes it at once). A plain cap
// that makes Accept wait (session 26: netutil.LimitListener) let a
// stranger who renews silent connections faster than the handshake
// timeout ends them hold every slot: 5,000 of them at 400/s kept a
// restarted peer, status calls and proxies from connecting at all
// (re-audit, December 2026). Evicting the oldest handshake instead makes
// a legitimate one lose only to a flood of more than max connections
// within its own handshake time (milliseconds), and a stranger cannot
// finish a handshake: the port requires a certificate of the cluster CA.
//
// tlsOn says a handshake marks a connection established (the server's
// credentials wrapped by establishOnHandshake); without TLS
// (insecure_no_tls) there is none, and every connection counts as
// established from its accept.
func rpcListener(l net.Listener, max int, tlsOn bool, log *slog.Logger) net.Listener {
	return &capListener{Listener: l, max: max, tlsOn: tlsOn, log: log}
}

type capListener struct {
	net.Listener
	max   int
	tlsOn bool
	log   *slog.Logger

	mu       sync.Mutex
	open     int
	pending  list.List // *capConn still in their handshake, oldest first
	lastWarn time.Time
}

// capConn is one accepted connection; its embedded Conn is the raw
// socket (tests look for it there).
type capConn struct {
	net.Conn
	l       *capListener
	host    string        // the remote address's host
	elem    *list.Element // in l.pending while in the handshake
	counted bool          // holds one of l.open (guarded by l.mu)
	once    sync.Once
}

func (l *capListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		cc := &capConn{Conn: rawnet.Wrap(c), l: l, host: hostOf(c.RemoteAddr())}
		var victim *capConn
		l.mu.Lock()
		if l.open >= l.max {
			e := l.evictee()
			if e == nil { // every slot past its handshake: refuse
				l.mu.Unlock()
				l.warn("gRPC port at its cap of connections, all past their handshake: refused a new one", "cap", l.max, "remote", c.RemoteAddr().String())
				_ = c.Close()
				continue
			}
			victim = e.Value.(*capConn)
			l.pending.Remove(e)
			victim.elem, victim.counted = nil, false
			l.open--
		}
		l.open++
		cc.counted = true
		if l.tlsOn {
			cc.elem = l.pending.PushBack(cc)
		}
		l.mu.Unlock()
		if victim != nil {
			l.warn("gRPC port at its cap of connections: closed the oldest one still in its TLS handshake for a new one", "cap", l.max, "closed", victim.RemoteAddr().String())
			_ = victim.Conn.Close()
		}
		return cc, nil
	}
}

// evictee is the element of l.pending that gives up its slot: the
// oldest of the host holding the most connections in their handshake,
// so a flood from one address evicts its own first (on one host, as on
// loopback, simply the oldest). nil when none is pending. l.mu is held.
func (l *capListener) evictee() *list.Element {
	count := map[string]int{}
	for e := l.pending.Front(); e != nil; e = e.Next() {
		count[e.Value.(*capConn).host]++
	}
	most, host := -1, ""
	for h, n := range count {
		if n > most || (n == most && h < host) {
			most, host = n, h
		}
	}
	for e := l.pending.Front(); e != nil; e = e.Next() {
		if e.Value.(*capConn).host == host {
			return e
		}
	}
	return nil
}

func hostOf(a net.Addr) string {
	if a == nil {
		return ""
	}
	h, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	return h
}

func (l *capListener) warn(msg string, args ...any) {
	if l.log == nil {
		return
	}
	now := time.Now()
	l.mu.Lock()
	quiet := now.Sub(l.lastWarn) < rpcEvictLogEvery
	if !quiet {
		l.lastWarn = now
	}
	l.mu.Unlock()
	if !quiet {
		l.log.Warn(msg, args...)
	}
}

// established takes c out of the handshake queue: it can no longer be
// evicted.
func (c *capConn) established() {
	c.l.mu.Lock()
	if c.elem != nil {
		c.l.pending.Remove(c.elem)
		c.elem = nil
	}
	c.l.mu.Unlock()
}

func (c *capConn) Close() error {
	c.once.Do(func() {
		c.l.mu.Lock()
		if c.elem != nil {
			c.l.pending.Remove(c.elem)
			c.elem = nil
		}
		if c.counted {
			c.counted = false
			c.l.open--
		}
		c.l.mu.Unlock()
	})
	return c.Conn.Close()
}

// establishOnHandshake marks a connection of rpcListener established
// once the server side of its TLS handshake succeeds.
type establishOnHandshake struct {
	credentials.TransportCredentials
}

func (e establishOnHandshake) ServerHandshake(raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	conn, info, err := e.TransportCredentials.ServerHandshake(raw)
	if err == nil {
		if cc, ok := raw.(*capConn); ok {
			cc.established()
		}
	}
	return conn, info, err
}

func (e establishOnHandshake) Clone() credentials.TransportCredentials {
	return establishOnHandshake{e.TransportCredentials.Clone()}
}
