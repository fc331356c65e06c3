package sqlproxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime/debug"
	"strings"
	"time"

	"phxgo/sqlproxy/auth"
	"phxgo/sqlproxy/wire"
)

// What a stranger can cost the proxy, and who never logs in through it.
//
//	accept ─▶ slot free? ─no─▶ ERR 1040 "Too many connections", close
//	   │ yes (MaxConnections)
//	   ▼
//	allowed network? (security.go) ─no─▶ ERR 1130
//	   ▼
//	greeting; every packet ≤ wire.MaxHandshakePacket, all within
//	LoginTimeout; 4 KiB buffers until logged in
//	   ▼
//	user denied (DenyUsers, AdminUser)? ─yes─▶ ERR 1045, refused{denied_user}
//	   ▼
//	auth: the user's most specific row for the client's real address
//	(a verified hop's _phxgo_client), native hash only ─no─▶ ERR 1045
//	   ▼
//	logged in: 64 KiB buffers, packets ≤ max_allowed_packet (else 1153)
//
// Memory before login: a connection holds two 4 KiB buffers, a goroutine
// and a packet that grows only as its bytes arrive (wire.readGrow), at
// most 68 KiB; so MaxConnections strangers cost about MaxConnections ×
// 100 KiB at worst, and none of them longer than LoginTimeout.
//
// A panic in a session (its goroutine) is recovered: logged with its
// stack, counted (phxgo_sqlproxy_session_panics_total), that client is
// closed and its backend connections closed (their state is unknown);
// every other session goes on.

// DefaultDenyUsers are the accounts no client reaches through the proxy:
// MariaDB's root and system accounts and phxgo's own (capture, proxy,
// admin). Root is for the unix socket on the host only.
const DefaultDenyUsers = "root,phxgo_*,mariadb.sys,mysql"

// DefaultMaxConnections is the default cap on client connections. It is
// above phxgo MariaDB's max_connections (500): sessions share pooled
// backend connections, and the master's proxy also carries every other
// node's forwarded sessions. At about 100 KiB each before login and
// 260 KiB logged in (client and backend buffers), 1024 stay within
// 100-270 MiB.
const DefaultMaxConnections = 1024

// DefaultMaxAllowedPacket is MariaDB 10.11's default max_allowed_packet,
// used when the master's cannot be read.
const DefaultMaxAllowedPacket = 16 << 20

// preLoginBuffer is the read and write buffer size until login.
const preLoginBuffer = 4 << 10

// Knobs are nil-by-default test hooks.
type Knobs struct {
	// OnCommand runs before the session handles each client command.
	OnCommand func(pkt []byte)
}

// ParseDenyUsers parses a comma-separated deny list: names, or prefixes
// ending in '*'. "" denies nothing beyond the admin user.
func ParseDenyUsers(s string) ([]string, error) {
	out := []string{}
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if strings.Contains(strings.TrimSuffix(f, "*"), "*") {
			return nil, fmt.Errorf("%w: deny-users: %q: '*' only at the end", ErrConfig, f)
		}
		out = append(out, f)
	}
	return out, nil
}

// deniedUser reports whether user may never log in through the proxy.
// Trailing spaces are ignored: MariaDB's user column pads them.
func (s *Server) deniedUser(user string) bool {
	u := strings.TrimRight(user, " ")
	if u == "" || s.cfg.AdminUser != "" && u == s.cfg.AdminUser {
		return true // anonymous accounts are not served either
	}
	for _, d := range s.cfg.DenyUsers {
		if p, ok := strings.CutSuffix(d, "*"); ok && strings.HasPrefix(u, p) || u == d {
			return true
		}
	}
	return false
}

// refuseFull answers a connection over the cap as MariaDB does (1040 in
// place of the greeting) and closes it.
func (s *Server) refuseFull(nc net.Conn) {
	s.metrics.refused.WithLabelValues("max_connections").Inc()
	_ = nc.SetWriteDeadline(time.Now().Add(time.Second))
	_ = wire.NewConnSize(nc, 256).WriteFlush(wire.PreHandshakeError(1040, "Too many connections"))
	nc.Close()
}

// clientOf is the address host rules judge a client by: its own, or the
// one a forwarding hop reports when the hop proved it is one of ours
// (TLS with a cluster certificate). An unverified hop's claim is
// ignored: it is judged by its own address.
func clientOf(nc net.Conn, attrs map[string]string, verifiedHop bool) auth.Client {
	c := auth.ClientFromAddr(nc.RemoteAddr())
	if verifiedHop {
		if ip := net.ParseIP(attrs[clientAttr]); ip != nil {
			c = auth.Client{IP: ip}
		}
	}
	return c
}

// recoverSession is deferred by a session's goroutine: a panic ends that
// session only.
func (s *Server) recoverSession(sess *session) {
	r := recover()
	if r == nil {
		return
	}
	s.metrics.panics.Inc()
	s.log.Error("sqlproxy: session panicked; closing its client", "id", sess.id, "user", sess.user,
		"remote", sess.cl.Conn.RemoteAddr().String(), "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
	_ = sess.cl.Conn.Close()
	sess.abandon()
}

// abandon closes the backends of a session that panicked: the one it
// held and the one it was using. Their state is unknown, so they are
// never pooled. A backend already handed back to the pool is taken out
// first; one another session took meanwhile is left alone.
func (sess *session) abandon() {
	var held *backend
	if sess.mu.TryLock() {
		held = sess.held
		sess.held, sess.armed = nil, false
		if sess.holdTimer != nil {
			sess.holdTimer.Stop()
		}
		if sess.idleTxTimer != nil {
			sess.idleTxTimer.Stop()
		}
		sess.mu.Unlock()
	} else {
		sess.srv.log.Warn("sqlproxy: panicked session held its lock; its held backend is closed when collected", "id", sess.id)
	}
	if held != nil {
		held.close()
	}
	// using may be back in the pool (take it out) or, rarely, just taken
	// by another session that has not synced it yet (owner still sess):
	// that session then sees a broken backend, which it handles.
	if u := sess.using; u != nil && u != held && (sess.srv.pool.take(u) || u.owner == sess) {
		u.close()
	}
}

// readPreLogin reads a packet before login: one over
// wire.MaxHandshakePacket gets 1153 and ends the connection.
func (sess *session) readPreLogin() ([]byte, error) {
	p, err := sess.cl.ReadPacket()
	if errors.Is(err, wire.ErrTooBig) {
		sess.srv.metrics.refused.WithLabelValues("too_big").Inc()
		_ = sess.cl.WriteFlush(wire.TooBig.Packet())
		drainClose(sess.cl)
	}
	return p, err
}

// drainClose ends a connection whose client is still sending (the rest
// of a packet too big to read): closing with unread bytes would send an
// RST that can destroy the error reply before the client reads it. So
// it stops writing, and reads and drops up to a second's worth of input
// (at most 64 MiB, into the read buffer only) before the caller closes.
func drainClose(c *wire.Conn) {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
	_ = c.Conn.SetReadDeadline(time.Now().Add(time.Second))
	_, _ = io.Copy(io.Discard, io.LimitReader(c.R, 64<<20))
}

// maxAllowedPacket is the bound of a logged-in client's packets:
// Config.MaxAllowedPacket, else the master's max_allowed_packet, else
// MariaDB's default.
func (s *Server) maxAllowedPacket() int {
	if n := s.cfg.MaxAllowedPacket; n > 0 {
		return n
	}
	if pl, ok := s.auth.(packetLimiter); ok {
		ctx, cancel := context.WithTimeout(s.ctx, 3*time.Second)
		n, err := pl.MaxAllowedPacket(ctx)
		cancel()
		if err == nil && n > 0 {
			return n
		}
	}
	return DefaultMaxAllowedPacket
}
