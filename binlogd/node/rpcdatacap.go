package node

import (
	"encoding/binary"
	"errors"
	"net"

	"google.golang.org/grpc/credentials"

	"phxgo/binlogd/mtls"
)

// maxPeerRequestBytes bounds the request data a connection that is not a
// node's (a proxy's, the operator's) may have in gRPC streams it has not
// ended. The server's MaxRecvMsgSize must fit a Paxos Promise (up to
// 1 GiB, paxos.Config.MaxMessageBytes) and is one limit for every
// method; grpc-go reads a whole request, and raises the stream's flow
// control window to its announced length, before any interceptor sees
// who sent it. So a proxy's certificate (one of a removed or never added
// node too) made binlogd hold 1 GiB per Status call, 2.8 GB of RSS for
// one 900 MiB call and as many again per concurrent one (red-team test,
// session 39). Proxies and operators send requests of a few hundred
// bytes; nodes, who may lie in Paxos anyway, keep the full limit.
const maxPeerRequestBytes = 1 << 20

// maxOpenDataStreams bounds the streams dataCapConn tracks at once.
const maxOpenDataStreams = 2 * maxRPCStreams

var errPeerRequestTooBig = errors.New("gRPC request data over the cap for a connection that is not a node's")

// capRequestsOf wraps conn, the server side of a finished handshake
// whose peer presented info, so that past maxPeerRequestBytes of DATA in
// open streams its reads fail (grpc-go then closes the connection).
// Node identities, and connections without TLS, are returned unchanged.
func capRequestsOf(conn net.Conn, info credentials.AuthInfo) net.Conn {
	ti, ok := info.(credentials.TLSInfo)
	if !ok {
		return conn
	}
	if ch := ti.State.VerifiedChains; len(ch) > 0 && len(ch[0]) > 0 {
		if id, err := mtls.IdentityOf(ch[0][0]); err == nil && id.Role == mtls.RoleNode {
			return conn
		}
	}
	return &dataCapConn{Conn: conn, max: maxPeerRequestBytes, skip: len(h2Preface), open: map[uint32]int{}}
}

const h2Preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

// HTTP/2 frame types and flags dataCapConn reads (RFC 9113 §6).
const (
	h2Data      = 0x0
	h2Headers   = 0x1
	h2RSTStream = 0x3
	h2EndStream = 0x1
)

// dataCapConn follows the HTTP/2 frames read through it: it counts the
// DATA payload of each stream until the stream ends (END_STREAM,
// RST_STREAM) and fails the read that takes the open streams' total past
// max. Only frame headers are parsed; payloads pass untouched.
type dataCapConn struct {
	net.Conn
	max   int
	total int            // DATA bytes of the streams in open
	open  map[uint32]int // stream id: DATA bytes so far
	skip  int            // bytes to pass before the next frame header (preface, payload)
	hdr   [9]byte
	nhdr  int
}

func (c *dataCapConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if ferr := c.follow(p[:n]); ferr != nil {
		return 0, ferr
	}
	return n, err
}

func (c *dataCapConn) follow(b []byte) error {
	for len(b) > 0 {
		if c.skip > 0 {
			k := min(c.skip, len(b))
			c.skip -= k
			b = b[k:]
			continue
		}
		k := copy(c.hdr[c.nhdr:], b)
		c.nhdr += k
		b = b[k:]
		if c.nhdr < len(c.hdr) {
			return nil
		}
		c.nhdr = 0
		length := int(c.hdr[0])<<16 | int(c.hdr[1])<<8 | int(c.hdr[2])
		typ, flags := c.hdr[3], c.hdr[4]
		sid := binary.BigEndian.Uint32(c.hdr[5:]) &^ (1 << 31)
		c.skip = length
		if typ == h2Data {
			if _, ok := c.open[sid]; !ok && len(c.open) >= maxOpenDataStreams {
				// Streams that sent data and never ended: a client has
				// at most maxRPCStreams open, so this is no client's
				// (empty DATA frames on made-up streams cost 9 bytes
				// each and would grow the map without bound).
				return errPeerRequestTooBig
			}
			c.open[sid] += length
			c.total += length
			if c.total > c.max {
				return errPeerRequestTooBig
			}
		}
		if typ == h2RSTStream || (typ == h2Data || typ == h2Headers) && flags&h2EndStream != 0 {
			c.total -= c.open[sid]
			delete(c.open, sid)
		}
	}
	return nil
}
