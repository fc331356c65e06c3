package node

import (
	"container/list"
	"errors"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"phxgo/binlogd/mtls"
	"phxgo/binlogd/rawnet"
	"phxgo/internal/addrrate"
	"phxgo/internal/connevict"
	"phxgo/internal/ratelog"
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
	// maxRPCConns caps the gRPC connections past their TLS handshake,
	// far above what a cluster uses (a link per peer, one per proxy and
	// admin command) and far below a usual file limit.
	maxRPCConns = 2048
	// maxRPCHandshakes caps the connections still in their TLS
	// handshake, on their own. A stranger's ClientHello costs binlogd
	// about 45 KB until the handshake ends (29 KB of TLS state, the
	// handshake goroutine's 16 KB stack): 2,048 of them, the one cap
	// there was, took binlogd's RSS from 33 to 164 MB under a flood of
	// 5,000 a second (audit, December 2026). 128 hold under 6 MB, while
	// real handshakes at once are a few: a link per peer, a proxy, an
	// operator's command. Small also sheds a flood's key exchanges when
	// it outruns binlogd's CPU: a connection evicted before its
	// handshake goroutine runs costs none. With 2,048 binlogd fell
	// behind accepting, and the kernel's accept queue overflowed: SYNs
	// dropped, anyone's connect waited 1-3 s (measured at 5,000 a
	// second; with 128, no overflow).
	maxRPCHandshakes = 128
	// rpcEvictLogEvery spaces the warnings about evictions.
	rpcEvictLogEvery = 30 * time.Second

	// maxRPCStreams caps the streams open at once on one connection
	// (gRPC's default: 2^32). A client waits for a slot past it; a
	// client that does not wait gets its stream refused. maxRPCHeaderBytes
	// caps a stream's header list as decoded (gRPC's default: 16 MiB;
	// phxgo's own calls send well under 1 KiB). A stream whose request has
	// not come yet holds its headers and a goroutine: one proxy
	// certificate opened 20,000 Status streams with 60 KB of metadata
	// each, sending no request, and grew binlogd by 1.4 GB (red-team test,
	// session 39); HPACK lets a peer name 16 MiB of headers with a few
	// bytes on the wire. A connection now holds at most 128 × 16 KiB.
	// Links use a few streams: Paxos one per peer, a proxy one watch and
	// its read windows.
	maxRPCStreams     = 128
	maxRPCHeaderBytes = 16 << 10
)

// Why establishOnHandshake fails a handshake that succeeded.
var (
	// errRPCConnCap: every slot for established connections is taken.
	errRPCConnCap = errors.New("binlogd: gRPC port at its cap of established connections")
	// errRPCEvicted: the connection gave its slot to a newer handshake
	// just before its own ended.
	errRPCEvicted = errors.New("binlogd: gRPC connection evicted in its TLS handshake for a newer one")
)

func rpcGuardOptions() []grpc.ServerOption {
	return []grpc.ServerOption{grpc.ConnectionTimeout(rpcHandshakeTimeout),
		grpc.MaxConcurrentStreams(maxRPCStreams), grpc.MaxHeaderListSize(maxRPCHeaderBytes)}
}

// rpcListener is l capped at maxPending connections in their TLS
// handshake and max past it, each read and written raw (package rawnet:
// no sysmon wake-up per Paxos message).
//
// Past maxPending, a new connection takes the slot of the oldest one
// still in its TLS handshake (of the address holding the most of them:
// evictee), which is closed; only a cap of established connections
// refuses the newcomer (closes it at once), and a handshake that ends
// with that cap full fails. A plain cap that makes Accept wait (session
// 26: netutil.LimitListener) let a stranger who renews silent
// connections faster than the handshake timeout ends them hold every
// slot: 5,000 of them at 400/s kept a restarted peer, status calls and
// proxies from connecting at all (re-audit, December 2026). Evicting
// the oldest handshake instead makes a legitimate one lose only to a
// flood of more than maxPending connections from its own address within
// its own handshake time (a few milliseconds: on loopback, 128 of them
// at 5,000 a second leave it 25 ms), and a stranger cannot finish a
// handshake: the port requires a certificate of the cluster CA. The
// handshakes' cap is small of its own because they are what a stranger
// can make binlogd hold (maxRPCHandshakes).
//
// tlsOn says a handshake marks a connection established (the server's
// credentials wrapped by establishOnHandshake); without TLS
// (insecure_no_tls) there is none, and every connection counts as
// established from its accept.
//
// Before any of that, lim (nil: none) may refuse a connection whose
// source address is over its budget of new handshakes (rpcrate.go): it
// is closed at once, before the TLS handshake's key exchange.
//
// Invariant: established <= max and pending.Len() <= maxPending.
func rpcListener(l net.Listener, max, maxPending int, tlsOn bool, lim *addrrate.Limiter, log *slog.Logger) *capListener {
	if maxPending < 1 {
		maxPending = 1 // evictee needs one to evict
	}
	return &capListener{Listener: l, max: max, maxPending: maxPending, tlsOn: tlsOn, lim: lim, log: log,
		rateLog: ratelog.Limiter{Every: rpcEvictLogEvery}}
}

// registerRPCGuardMetrics exports l's slots and what it closed: evictions
// that go on are a flood of strangers (or a peer's handshake that lost
// to one), refusals a cap of established connections, rate-limited
// connections an address over its budget of handshakes under pressure.
func registerRPCGuardMetrics(reg prometheus.Registerer, l *capListener) {
	opts := func(name, help string) prometheus.CounterOpts {
		return prometheus.CounterOpts{Namespace: "phxgo", Subsystem: "binlogd", Name: name, Help: help}
	}
	conns := func(state string, f func() int) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "phxgo", Subsystem: "binlogd", Name: "grpc_conns",
			Help:        "connections open on the gRPC port, in their TLS handshake or past it (established)",
			ConstLabels: prometheus.Labels{"state": state}}, func() float64 {
			l.mu.Lock()
			defer l.mu.Unlock()
			return float64(f())
		})
	}
	reg.MustRegister(
		prometheus.NewCounterFunc(opts("grpc_handshakes_evicted_total",
			"gRPC connections closed in their TLS handshake to make room for a newcomer (at the cap of handshakes): a flood of strangers"),
			func() float64 { return float64(l.evicted.Load()) }),
		prometheus.NewCounterFunc(opts("grpc_handshakes_ratelimited_total",
			"gRPC connections closed at accept, before their TLS handshake, because their source address was over its budget of new handshakes while the node was under pressure: a flood of strangers"),
			func() float64 { return float64(l.ratelimited.Load()) }),
		prometheus.NewCounterFunc(opts("grpc_conns_refused_total",
			"gRPC connections closed because every slot for established connections was taken"),
			func() float64 { return float64(l.refused.Load()) }),
		conns("handshake", func() int { return l.pending.Len() }),
		conns("established", func() int { return l.established }),
	)
}

type capListener struct {
	net.Listener
	max, maxPending int
	tlsOn           bool
	lim             *addrrate.Limiter // nil: no budget of handshakes
	log             *slog.Logger
	rateLog         ratelog.Limiter // spaces the lines about rate-limited connections

	// now is the clock lim is asked with; nil: time.Now (tests step it).
	now func() time.Time
	// prepare (nil: none) sets up the socket of a connection lim
	// admitted, before it is wrapped raw (acceptedLink.prepare): a
	// refused one costs none of its system calls.
	prepare func(net.Conn)

	// evicted, refused and ratelimited count for the metrics
	// (registerRPCGuardMetrics).
	evicted, refused, ratelimited atomic.Uint64

	mu          sync.Mutex
	established int       // connections past their handshake
	pending     list.List // *capConn still in their handshake, oldest first
	lastWarn    time.Time
	// byIdentity counts the established connections of each identity
	// that is not a node's (rpcconnid.go).
	byIdentity map[mtls.Identity]int
}

// capConn is one accepted connection; its embedded Conn is the raw
// socket (tests look for it there).
type capConn struct {
	net.Conn
	l       *capListener
	host    string        // the remote address's host
	elem    *list.Element // in l.pending while in the handshake
	counted bool          // holds one of l.established (guarded by l.mu)
	// ident, when claimed, holds one of l.byIdentity[ident] (guarded by l.mu).
	ident   mtls.Identity
	claimed bool
	once    sync.Once
}

func (l *capListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if !l.admit(c) {
			continue
		}
		if l.prepare != nil {
			l.prepare(c)
		}
		cc := &capConn{Conn: rawnet.Wrap(c), l: l, host: connevict.Host(c.RemoteAddr())}
		var victim *capConn
		l.mu.Lock()
		if l.established >= l.max { // no slot to end its handshake in: refuse
			l.mu.Unlock()
			l.refused.Add(1)
			l.warn("gRPC port at its cap of established connections: refused a new one", "cap", l.max, "remote", c.RemoteAddr().String())
			_ = c.Close()
			continue
		}
		if l.tlsOn {
			if l.pending.Len() >= l.maxPending {
				e := l.evictee()
				victim = e.Value.(*capConn)
				l.pending.Remove(e)
				victim.elem = nil
			}
			cc.elem = l.pending.PushBack(cc)
		} else {
			l.established++
			cc.counted = true
		}
		l.mu.Unlock()
		if victim != nil {
			l.evicted.Add(1)
			l.warn("gRPC port at its cap of connections in their TLS handshake: closed the oldest for a new one", "cap", l.maxPending, "closed", victim.RemoteAddr().String())
			_ = victim.Conn.Close()
		}
		return cc, nil
	}
}

// admit asks l.lim whether c's source address may start a handshake,
// and closes c if not: the check costs a map lookup, the handshake's
// key exchange about 300 µs of CPU.
func (l *capListener) admit(c net.Conn) bool {
	if l.lim == nil {
		return true
	}
	now := time.Now
	if l.now != nil {
		now = l.now
	}
	if l.lim.Allow(remoteIP(c), now()) {
		return true
	}
	total := l.ratelimited.Add(1) // before the close the client sees
	_ = c.Close()
	if ok, held := l.rateLog.Allow(time.Now()); ok && l.log != nil {
		cfg := l.lim.Config()
		l.log.Warn("gRPC port under a flood of new connections: closed one whose address is over its budget of TLS handshakes",
			"remote", c.RemoteAddr().String(), "rate", cfg.Rate, "burst", cfg.Burst,
			"ratelimited_total", total, "unlogged_before", held)
	}
	return false
}

// remoteIP is c's remote IP; the zero Addr when c is not TCP.
func remoteIP(c net.Conn) netip.Addr {
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		return a.AddrPort().Addr()
	}
	return netip.Addr{}
}

// evictee is the element of l.pending that gives up its slot: the
// oldest of the host holding the most connections in their handshake,
// so a flood from one address evicts its own first (on one host, as on
// loopback, simply the oldest). nil when none is pending. l.mu is held.
func (l *capListener) evictee() *list.Element {
	return connevict.Oldest(&l.pending, func(c *capConn) string { return c.host })
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

// established takes c out of the handshake queue into an established
// slot: it can no longer be evicted. errRPCConnCap: every established
// slot is taken; errRPCEvicted: c lost its slot to a newer handshake
// meanwhile. The caller closes c on either.
func (c *capConn) established() error {
	l := c.l
	l.mu.Lock()
	defer l.mu.Unlock()
	if c.elem == nil {
		if c.counted {
			return nil
		}
		return errRPCEvicted
	}
	l.pending.Remove(c.elem)
	c.elem = nil
	if l.established >= l.max {
		return errRPCConnCap
	}
	l.established++
	c.counted = true
	return nil
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
			c.l.established--
		}
		c.l.unclaimLocked(c)
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
	if err != nil {
		return conn, info, err
	}
	cc, ok := raw.(*capConn)
	if !ok {
		return capRequestsOf(conn, info), info, nil
	}
	err = cc.established()
	if err == nil {
		err = cc.claim(info) // rpcconnid.go
	}
	if err != nil {
		if errors.Is(err, errRPCIdentityCap) {
			cc.l.refused.Add(1)
			cc.l.warn("gRPC port: an identity that is not a node's holds its cap of connections: refused one at the end of its handshake",
				"cap", maxRPCConnsPerIdentity, "identity", cc.ident.String(), "remote", raw.RemoteAddr().String())
		}
		if errors.Is(err, errRPCConnCap) {
			cc.l.refused.Add(1)
			cc.l.warn("gRPC port at its cap of established connections: refused one at the end of its handshake", "cap", cc.l.max, "remote", raw.RemoteAddr().String())
		}
		_ = conn.Close()
		return nil, nil, err
	}
	return capRequestsOf(conn, info), info, nil // rpcdatacap.go
}

func (e establishOnHandshake) Clone() credentials.TransportCredentials {
	return establishOnHandshake{e.TransportCredentials.Clone()}
}
