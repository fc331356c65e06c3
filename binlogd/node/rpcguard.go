package node

import (
	"net"
	"time"

	"golang.org/x/net/netutil"
	"google.golang.org/grpc"

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
	// and far below a usual file limit. Past it, Accept waits.
	maxRPCConns = 2048
)

func rpcGuardOptions() []grpc.ServerOption {
	return []grpc.ServerOption{grpc.ConnectionTimeout(rpcHandshakeTimeout)}
}

// rpcListener is l capped at maxRPCConns, each connection's reads and
// writes raw (package rawnet: no sysmon wake-up per Paxos message). The
// order matters: the cap's connection type embeds what it wraps, so
// wrapping the cap instead left every read on the net package's path
// (session 27: binlogds' CPU per transaction rose by that).
func rpcListener(l net.Listener) net.Listener {
	return netutil.LimitListener(rawnet.Listener{Listener: l}, maxRPCConns)
}
