package replserver

import (
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"

	"github.com/go-mysql-org/go-mysql/mysql"
)

// Before login a connection is a stranger's. go-mysql's packet reader
// allocates a packet's announced length before reading it, and follows
// continuation packets with no limit: 64 connections that each sent only
// a header announcing 16 MiB took binlogd from 80 MiB to 1 GiB, and two
// that streamed continuation packets to 4 GiB (audit, December 2026).
// preAuthGuard sits under go-mysql until login and reads every packet
// itself first, within limits.
//
// It also answers the client's request for TLS itself, below go-mysql:
// were go-mysql to switch to TLS, the packets inside would reach its
// reader unchecked (64 strangers that finished a TLS handshake and
// announced 16 MiB made binlogd reserve 1 GiB). go-mysql still offers
// TLS in its greeting; it just never sees the SSLRequest, so the guard
// shifts the handshake's sequence numbers by one each way.
const (
	// maxPreAuthPacket bounds one packet before login. A handshake
	// response with connection attributes is well under 1 KiB.
	maxPreAuthPacket = 64 << 10
	// preAuthBudget bounds the packets a connection sends before login.
	preAuthBudget = 256 << 10
	// sslRequestLen is the payload length of the packet that asks for
	// TLS (MariaDB's SSLRequest); go-mysql tells it from a handshake
	// response by this length alone.
	sslRequestLen = 32
)

var (
	errPreAuthPacket = errors.New("packet before login over the limit")
	errPreAuthBudget = fmt.Errorf("more than %d bytes before login", preAuthBudget)
)

// preAuthGuard is the connection go-mysql's handshake reads and writes.
// Until loggedIn it hands go-mysql whole packets it has read and checked;
// then it passes through to the socket, or to the TLS session over it.
// It is used by the connection's goroutine only.
type preAuthGuard struct {
	net.Conn              // the socket
	tlsConfig *tls.Config // nil: no TLS offered
	tc        *tls.Conn   // the client's TLS session, once it asked
	open      bool        // logged in
	budget    int
	packets   int    // read from the client
	passed    int    // handed to go-mysql
	pending   []byte // a checked packet, or what is left of it
	out       frameShift
	commands  commandFrames // after login (cmdlimit.go)
}

func newPreAuthGuard(c net.Conn, tlsConfig *tls.Config) *preAuthGuard {
	return &preAuthGuard{Conn: c, tlsConfig: tlsConfig, budget: preAuthBudget}
}

// loggedIn ends the checks: the account is known.
func (g *preAuthGuard) loggedIn() { g.open = true }

// stream is the connection's byte stream: the TLS session if the client
// asked for one, else the socket.
func (g *preAuthGuard) stream() net.Conn {
	if g.tc != nil {
		return g.tc
	}
	return g.Conn
}

// commandTooBig is the length of the command packet over
// maxCommandPacket a logged-in client announced (0: none).
func (g *preAuthGuard) commandTooBig() int { return g.commands.over }

// overTLS tells whether the client's session runs over TLS.
func (g *preAuthGuard) overTLS() bool { return g.tc != nil }

func (g *preAuthGuard) Read(p []byte) (int, error) {
	if len(g.pending) == 0 {
		if g.open {
			n, err := g.stream().Read(p)
			if cerr := g.commands.check(p[:n]); cerr != nil {
				return 0, cerr
			}
			return n, err
		}
		if err := g.next(); err != nil {
			return 0, err
		}
	}
	n := copy(p, g.pending)
	g.pending = g.pending[n:]
	return n, nil
}

// next reads and checks the client's next packet before login, and
// answers an SSLRequest itself.
func (g *preAuthGuard) next() error {
	pkt, err := g.readPacket()
	if err != nil {
		return err
	}
	if g.packets == 1 && g.tc == nil && g.tlsConfig != nil && len(pkt)-4 == sslRequestLen {
		tc := tls.Server(g.Conn, g.tlsConfig)
		if err := tc.Handshake(); err != nil {
			return fmt.Errorf("TLS handshake: %w", err)
		}
		g.tc = tc
		if pkt, err = g.readPacket(); err != nil {
			return err
		}
	}
	if g.passed == 0 && len(pkt)-4 == sslRequestLen {
		// go-mysql takes a 32-byte handshake response for an SSLRequest
		// (a real response is longer): a second one, inside the guard's
		// TLS, would start a TLS session of go-mysql's own over the guard,
		// whose packets the guard could not see (re-audit, December 2026).
		return errors.New("an SSLRequest where the handshake response belongs")
	}
	if g.tc != nil {
		pkt[3]-- // go-mysql never saw the SSLRequest
	}
	g.passed++
	g.pending = pkt
	return nil
}

// readPacket reads one whole packet, header included, within the limits.
func (g *preAuthGuard) readPacket() ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(g.stream(), hdr[:]); err != nil {
		return nil, err
	}
	length := int(hdr[0]) | int(hdr[1])<<8 | int(hdr[2])<<16
	if length > maxPreAuthPacket {
		return nil, fmt.Errorf("%w: %d bytes announced, at most %d", errPreAuthPacket, length, maxPreAuthPacket)
	}
	if g.budget -= 4 + length; g.budget < 0 {
		return nil, errPreAuthBudget
	}
	pkt := make([]byte, 4+length)
	copy(pkt, hdr[:])
	if _, err := io.ReadFull(g.stream(), pkt[4:]); err != nil {
		return nil, err
	}
	g.packets++
	return pkt, nil
}

func (g *preAuthGuard) Write(p []byte) (int, error) {
	if !g.open {
		if q, hidden := hideHandshakeError(p); hidden {
			if _, err := g.write(q); err != nil {
				return 0, err
			}
			return len(p), nil // go-mysql checks that its packet went whole
		}
	}
	return g.write(p)
}

func (g *preAuthGuard) write(p []byte) (int, error) {
	if g.tc == nil {
		return g.Conn.Write(p)
	}
	if g.open {
		return g.tc.Write(p)
	}
	if _, err := g.tc.Write(g.out.shift(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// frameShift follows the packets go-mysql writes during the handshake
// and adds one to each sequence number (the client counted its
// SSLRequest).
type frameShift struct{ frames packetFrames }

func (f *frameShift) shift(p []byte) []byte {
	out := append([]byte(nil), p...)
	_ = f.frames.walk(out, func(seq, _ int) error {
		out[seq]++
		return nil
	})
	return out
}

// packetFrames follows MySQL packet framing (3 bytes of length, 1 of
// sequence, the payload) across the chunks of a byte stream.
type packetFrames struct {
	hdrN int // header bytes of the current packet seen
	left int // its payload bytes still to come
	hdr  [3]byte
}

// walk follows p, the next bytes of the stream, calling atHeader with
// the index in p of each packet's sequence byte and the payload length
// its header announced; an error from atHeader ends the walk.
func (f *packetFrames) walk(p []byte, atHeader func(seq, length int) error) error {
	for i := 0; i < len(p); {
		if f.left > 0 {
			k := min(f.left, len(p)-i)
			f.left -= k
			i += k
			continue
		}
		if f.hdrN < 3 {
			f.hdr[f.hdrN] = p[i]
			f.hdrN++
			i++
			continue
		}
		f.left = int(f.hdr[0]) | int(f.hdr[1])<<8 | int(f.hdr[2])<<16
		f.hdrN = 0
		if err := atHeader(i, f.left); err != nil {
			return err
		}
		i++
	}
	return nil
}

// hideHandshakeError turns an ERR packet go-mysql writes before login
// with ER_UNKNOWN_ERROR (1105), whose message is a Go error's text (the
// guard's limits, TLS failures, "connection was bad"), into MariaDB's
// own 1043 "Bad handshake": a stranger learns nothing of binlogd's
// internals (audit, December 2026). Access denied (1045) and every other
// packet pass unchanged; the sequence number is kept.
func hideHandshakeError(p []byte) ([]byte, bool) {
	const hdr = 4
	if len(p) < hdr+3 || p[hdr] != 0xff || int(p[0])|int(p[1])<<8|int(p[2])<<16 != len(p)-hdr ||
		binary.LittleEndian.Uint16(p[hdr+1:]) != mysql.ER_UNKNOWN_ERROR {
		return p, false
	}
	payload := append([]byte{0xff, 0, 0}, "#08S01Bad handshake"...)
	binary.LittleEndian.PutUint16(payload[1:], mysql.ER_HANDSHAKE_ERROR)
	out := []byte{byte(len(payload)), byte(len(payload) >> 8), byte(len(payload) >> 16), p[3]}
	return append(out, payload...), true
}
