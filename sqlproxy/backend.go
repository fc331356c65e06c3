package sqlproxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"phxgo/sqlproxy/wire"
)

// hopAttr marks a connection opened by another phxgo proxy: the receiving
// proxy serves it only if it is the master itself and never forwards it.
const hopAttr = "_phxgo_hop"

// clientAttr carries the original client's address on a hop, so the
// master's proxy judges host rules by it (guard.go: clientOf; trusted
// only on a hop verified by TLS).
const clientAttr = "_phxgo_client"

// erHostNotPrivileged is MariaDB's ER_HOST_NOT_PRIVILEGED (1130): before
// the greeting, a host it refuses; after it, a PROXY header it refuses.
const erHostNotPrivileged = 1130

// poolKey identifies interchangeable backend connections.
type poolKey struct {
	addr string
	// node is the member whose MariaDB (or, for a hop, proxy) is at addr,
	// from the view the route was chosen in: the TLS handshake wants its
	// certificate (node N's for MariaDB, proxy N's for a hop).
	node    uint32
	user    string
	stage1  string // the login secret the connection was opened with
	caps    uint32
	charset uint8
	client  string // a hop's original client address (clientAttr); "" otherwise
	socket  bool   // may use this node's MariaDB socket (session.socketOK)
	// origin: the client a MariaDB login names in its PROXY header
	// (proxyproto.go: originFor); "" for a hop. Invariant: a connection
	// opened for one origin never serves another (MariaDB chose its
	// account by it).
	origin string
}

// backend is one connection to a MariaDB or to the master's proxy.
// Invariant: a backend is owned by at most one session or by the pool.
type backend struct {
	c      *wire.Conn
	key    poolKey
	kind   routeKind
	db     string           // current database as far as the proxy knows
	stmts  map[uint32]bstmt // session statement id -> the statement here
	closes uint64           // owner's closes when its closed statements were last dropped here
	owner  *session         // last session that used it
	gen    uint64           // owner's stateGen when last synced
	idleAt time.Time
	// loginStatus: the status flags of the login's OK, which show the
	// sql_mode a new session starts with (Server.freshMode).
	loginStatus uint16
	// greeted: the server's greeting was read (an ERR after it answers
	// the login, not the connection).
	greeted bool
	// hdr: the PROXY header the handshake sends in front of its first
	// packet, in the same write: written at connect, it raced MariaDB's
	// refusal (the server closed before the login was written, and the
	// proxy saw a reset instead of its ERR).
	hdr []byte
}

func (b *backend) close() { _ = b.c.Close() }

// dial opens and authenticates a backend connection as the client's user,
// answering mysql_native_password with SHA1(pw). A *wire.Error is
// MariaDB's own refusal (pass it to the client); error is a network or
// protocol failure.
//
// peerTimeout (Config.PeerTimeout) bounds a silent peer: a forwarded
// session's proxy-to-proxy hop and a MariaDB across a partition fail in
// bounded time instead of after TCP's minutes.
//
// peerTLS (Config.PeerTLS), for a forwarding hop, wraps the connection in
// mutual TLS before the login (security.go); mysqlTLS (Config.MySQLTLS),
// for a MariaDB reached over TCP (not this node's unix socket), in TLS
// verified against the cluster CA (mysqltls.go).
//
// header: a connection to a MariaDB over TCP opens with a PROXY header
// naming key.origin (proxyproto.go); the socket and a hop get none. A
// MariaDB refusing it is *errHeaderRefused.
func dial(ctx context.Context, dialer DialFunc, key poolKey, kind routeKind, db string, timeout, peerTimeout time.Duration, peerTLS, mysqlTLS *TLS, header bool) (*backend, *wire.Error, error) {
	nc, err := dialer(ctx, "tcp", key.addr)
	if err != nil {
		return nil, nil, err
	}
	unix := nc.RemoteAddr().Network() == "unix"
	if kind == routeForward || unix {
		mysqlTLS = nil
	}
	var hdr []byte
	if header && kind != routeForward && !unix && key.origin != "" {
		hdr = proxyHeader(key.origin, nc.RemoteAddr())
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	if err := setPeerTimeout(nc, peerTimeout); err != nil {
		nc.Close()
		return nil, nil, fmt.Errorf("peer timeout: %w", err)
	}
	c := wire.NewConnRaw(nc, wire.DefaultBufferSize)
	_ = nc.SetDeadline(time.Now().Add(timeout))
	b := &backend{c: c, key: key, kind: kind, db: db, stmts: map[uint32]bstmt{}, hdr: hdr}
	werr, err := b.handshake(ctx, db, peerTLS, mysqlTLS)
	if err != nil || werr != nil {
		nc.Close()
		if hdr != nil && werr != nil && b.greeted && werr.Code == erHostNotPrivileged {
			var local net.IP
			if ta, ok := nc.LocalAddr().(*net.TCPAddr); ok {
				local = ta.IP
			}
			return nil, nil, &errHeaderRefused{addr: key.addr, local: local, werr: werr}
		}
		return nil, werr, err
	}
	_ = nc.SetDeadline(time.Time{})
	return b, nil, nil
}

func (b *backend) handshake(ctx context.Context, db string, peerTLS, mysqlTLS *TLS) (*wire.Error, error) {
	p, err := b.c.ReadPacket()
	if err != nil {
		return nil, fmt.Errorf("read greeting: %w", err)
	}
	if len(p) > 0 && p[0] == wire.HeaderErr {
		return wire.ParseError(p), nil
	}
	g, err := wire.ParseGreeting(p)
	if err != nil {
		return nil, err
	}
	b.greeted = true
	if b.hdr != nil {
		_, _ = b.c.W.Write(b.hdr) // flushed with the first packet
	}
	caps := b.key.caps&g.Caps | wire.ClientProtocol41 | wire.ClientSecureConn | wire.ClientPluginAuth
	caps &^= wire.ClientSSL | wire.ClientCompress | wire.ClientConnectWithDB | wire.ClientConnectAttrs
	if db != "" {
		caps |= wire.ClientConnectWithDB
	}
	if (b.key.caps^caps)&wire.ClientDeprecateEOF != 0 {
		return nil, fmt.Errorf("backend %s does not support CLIENT_DEPRECATE_EOF", b.key.addr)
	}
	if b.kind == routeForward && peerTLS != nil {
		c, err := startClientTLS(ctx, b.c, peerTLS, b.key.addr, b.key.node, g, caps, b.key.charset)
		if err != nil {
			return nil, err
		}
		b.c = c
		caps |= wire.ClientSSL // the login that follows says it runs in TLS
	} else if mysqlTLS != nil {
		c, err := startMySQLTLS(ctx, b.c, mysqlTLS, b.key.addr, b.key.node, g, caps, b.key.charset)
		if werr := (*wire.Error)(nil); errors.As(err, &werr) {
			return werr, nil
		}
		if err != nil {
			return nil, err
		}
		b.c = c
		caps |= wire.ClientSSL
	}
	r := &wire.Response{Caps: caps, MaxPacket: 1 << 30, Charset: b.key.charset, User: b.key.user,
		Auth: wire.ScrambleFromStage1(g.Salt, []byte(b.key.stage1)), DB: db, Plugin: wire.NativePlugin}
	if b.kind == routeForward && g.Caps&wire.ClientConnectAttrs != 0 {
		r.Caps |= wire.ClientConnectAttrs
		r.Attrs = map[string]string{hopAttr: "1"}
		if b.key.client != "" {
			r.Attrs[clientAttr] = b.key.client
		}
	}
	if err := b.c.WriteFlush(r.Encode()); err != nil {
		return nil, err
	}
	for range 3 {
		p, err := b.c.ReadPacket()
		if err != nil {
			return nil, fmt.Errorf("read auth result: %w", err)
		}
		if len(p) == 0 {
			return nil, wire.ErrShort
		}
		switch p[0] {
		case wire.HeaderOK:
			b.loginStatus, _ = wire.StatusOf(p)
			return nil, nil
		case wire.HeaderErr:
			return wire.ParseError(p), nil
		case wire.HeaderEOF:
			plugin, salt, _ := wire.ParseAuthSwitch(p)
			if plugin != wire.NativePlugin {
				return nil, fmt.Errorf("backend %s asks for auth plugin %q", b.key.addr, plugin)
			}
			if err := b.c.WriteFlush(wire.ScrambleFromStage1(salt, []byte(b.key.stage1))); err != nil {
				return nil, err
			}
		default:
			return nil, fmt.Errorf("backend %s: unexpected auth packet 0x%02x", b.key.addr, p[0])
		}
	}
	return nil, fmt.Errorf("backend %s: too many auth rounds", b.key.addr)
}

// exec sends one command and reads its whole response, dropping rows. The
// caller must own b. Used to replay session state; not for client data.
func (b *backend) exec(cmd byte, arg []byte, caps uint32) (wire.Result, error) {
	pkt := append([]byte{cmd}, arg...)
	b.c.Seq = 0
	if err := b.c.WriteFlush(pkt); err != nil {
		return wire.Result{}, err
	}
	// A client side that throws the response away; one per call, as
	// sessions replay at once (a shared bufio.Writer was a data race).
	discard := &wire.Conn{W: bufio.NewWriterSize(io.Discard, 16)}
	if cmd == wire.ComStmtPrepare {
		return wire.RelayPrepare(b.c, discard, caps, 0)
	}
	res, err := wire.RelayResponse(b.c, discard, cmd, caps)
	if err == nil && res.Err == nil && !res.HasStatus && (cmd == wire.ComPing || cmd == wire.ComResetConnection || cmd == wire.ComInitDB) {
		// MariaDB answers these with OK or ERR only: anything else is an
		// answer to something earlier, and the connection is out of step.
		return res, fmt.Errorf("%w: no OK packet in answer to command 0x%02x (the connection is out of step)", wire.ErrProtocol, cmd)
	}
	return res, err
}
