package replserver

import (
	"errors"
	"fmt"
	"net"
)

// Before login a connection is a stranger's. go-mysql's packet reader
// allocates a packet's announced length before reading it, and follows
// continuation packets with no limit: 64 connections that each sent only
// a header announcing 16 MiB took binlogd from 80 MiB to 1 GiB, and two
// that streamed continuation packets to 4 GiB (audit, December 2026).
// preAuthGuard sits under go-mysql until login and refuses both, as far
// as it can see them: inside TLS the framing is encrypted, and go-mysql
// still reserves what a header there announces (64 connections that
// finished a TLS handshake and announced 16 MiB: about 1 GiB until the
// login deadline). Owning the handshake would close that too.
const (
	// maxPreAuthPacket bounds one packet before login. A handshake
	// response with connection attributes is well under 1 KiB.
	maxPreAuthPacket = 64 << 10
	// preAuthBudget bounds all bytes a connection sends before login,
	// TLS handshake included (a ClientHello and a client certificate
	// chain are a few KiB).
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

// preAuthGuard reads the MySQL packet framing of a connection until
// login: a packet over maxPreAuthPacket ends the connection before
// go-mysql sees its header. Once the client asks for TLS the framing is
// inside the encryption, and only the byte budget applies until login.
// It is used by the connection's goroutine only.
type preAuthGuard struct {
	net.Conn
	open    bool // logged in: reads pass through
	opaque  bool // TLS began
	budget  int
	hdr     [4]byte
	hdrN    int
	left    int // payload bytes of the current packet still to come
	packets int // packets whose header was read
	ssl     bool
}

func newPreAuthGuard(c net.Conn) *preAuthGuard { return &preAuthGuard{Conn: c, budget: preAuthBudget} }

// loggedIn ends the checks: the account is known.
func (g *preAuthGuard) loggedIn() { g.open = true }

func (g *preAuthGuard) Read(p []byte) (int, error) {
	n, err := g.Conn.Read(p)
	if g.open || n == 0 {
		return n, err
	}
	if g.budget -= n; g.budget < 0 {
		return 0, errPreAuthBudget
	}
	if !g.opaque {
		if ferr := g.frame(p[:n]); ferr != nil {
			return 0, ferr
		}
	}
	return n, err
}

// frame follows the packet boundaries in b, the next bytes of the
// stream.
func (g *preAuthGuard) frame(b []byte) error {
	for len(b) > 0 && !g.opaque {
		if g.left > 0 {
			k := min(g.left, len(b))
			g.left -= k
			b = b[k:]
			if g.left == 0 && g.ssl {
				g.opaque = true // what follows is the TLS handshake
			}
			continue
		}
		k := copy(g.hdr[g.hdrN:], b)
		g.hdrN += k
		b = b[k:]
		if g.hdrN < len(g.hdr) {
			return nil
		}
		g.hdrN = 0
		length := int(g.hdr[0]) | int(g.hdr[1])<<8 | int(g.hdr[2])<<16
		if length > maxPreAuthPacket {
			return fmt.Errorf("%w: %d bytes announced, at most %d", errPreAuthPacket, length, maxPreAuthPacket)
		}
		g.packets++
		g.left = length
		g.ssl = g.packets == 1 && length == sslRequestLen
		if g.left == 0 && g.ssl {
			g.opaque = true
		}
	}
	return nil
}
