package paxos

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/keepalive"

	pb "phxgo/proto"
)

// gRPC transport: one long-lived client stream per peer carries batches of
// messages; the peer's replies come back on its own stream to us. Sending
// never blocks the run loop: messages queue per peer and a sender
// goroutine drains the queue into as few PaxosBatch frames as it can. A
// broken stream drops what it carried (the protocol retransmits) and is
// re-opened with backoff; connections are dialled lazily.

const (
	maxQueuedPerPeer = 1 << 16
	maxBatchBytes    = 1 << 20
	maxBackoff       = 500 * time.Millisecond
)

type grpcTransport struct {
	self uint32
	opts []grpc.DialOption
	// perPeer, if set, adds the options of one peer's connection (its
	// expected identity: WithPeerDialOption).
	perPeer func(id uint32) grpc.DialOption
	log     *slog.Logger
	wg      sync.WaitGroup

	mu    sync.RWMutex // guards peers: setPeers runs while others send
	peers map[uint32]*peerSender
}

func newGRPCTransport(cfg Config, dialOpts []grpc.DialOption, perPeer func(uint32) grpc.DialOption, log *slog.Logger) *grpcTransport {
	t := &grpcTransport{self: cfg.ID, log: log, perPeer: perPeer, peers: make(map[uint32]*peerSender)}
	t.opts = append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, PeerDialOptions(cfg)...)
	t.opts = append(t.opts, dialOpts...)
	t.setPeers(cfg.Peers)
	return t
}

// setPeers makes the transport follow the membership: it dials added
// nodes and closes the streams of nodes no longer in addrs (or moved).
func (t *grpcTransport) setPeers(addrs map[uint32]string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for id, p := range t.peers {
		if a, ok := addrs[id]; !ok || a != p.addr {
			p.cancel()
			delete(t.peers, id)
		}
	}
	for id, addr := range addrs {
		if id == t.self || t.peers[id] != nil || addr == "" {
			continue
		}
		ctx, cancel := context.WithCancel(context.Background())
		opts := t.opts[:len(t.opts):len(t.opts)]
		if t.perPeer != nil {
			opts = append(opts, t.perPeer(id))
		}
		p := &peerSender{id: id, addr: addr, opts: opts, log: t.log.With("peer", id),
			wake: make(chan struct{}, 1), ctx: ctx, cancel: cancel}
		t.peers[id] = p
		t.wg.Add(1)
		go func() { defer t.wg.Done(); p.run() }()
	}
}

// Links that heal. A partition that drops packets (rather than refusing
// connections) leaves a stream's TCP connection open with data
// unacknowledged; left alone, TCP retransmits it with exponential backoff
// and a reconnect waits out gRPC's own (a 20 s connect timeout, backoff
// up to 2 min), so a node stayed deaf for 8-40 s after a Jepsen partition
// healed. Instead, a connection whose data goes unacknowledged for
// LinkTimeout is closed (TCP_USER_TIMEOUT, which gRPC sets from the
// keepalive timeout; its pings find idle dead links), and redials are
// quick and bounded.
//
// gRPC sets TCP_USER_TIMEOUT only on a *net.TCPConn: a dialer or
// listener that hands it anything else (binlogd's raw sockets, package
// rawnet) must set it itself, to LinkTimeout.

// LinkTimeout is how long a peer link may leave data unacknowledged: the
// keepalive timeout of PeerDialOptions and GRPCServerOptions.
func LinkTimeout(cfg Config) time.Duration { return max(2*time.Second, 4*cfg.ElectionTimeout) }

// keepaliveEvery is gRPC's minimum client ping interval; the server must
// allow it (GRPCServerOptions).
const keepaliveEvery = 10 * time.Second

// flowWindow is the fixed HTTP/2 flow-control window of peer links, per
// stream and per connection. Setting it turns off gRPC's bandwidth
// estimator, which otherwise answers a received data frame with a PING
// (and the peer with a PING ack) whenever none is out: on links that
// carry a few small Paxos messages per millisecond that doubled the
// frames, write syscalls and TLS records per message. 16 MiB is above
// what the estimator grows to on loopback and LAN links.
const flowWindow = 16 << 20

// PeerDialOptions are the keepalive, redial and flow-control settings of
// the links between nodes configured like cfg; the transport uses them,
// and other node-to-node clients (binlogd's admin calls) should too.
func PeerDialOptions(cfg Config) []grpc.DialOption {
	return []grpc.DialOption{
		grpc.WithInitialWindowSize(flowWindow),
		grpc.WithInitialConnWindowSize(flowWindow),
		grpc.WithKeepaliveParams(keepalive.ClientParameters{
			Time: keepaliveEvery, Timeout: LinkTimeout(cfg), PermitWithoutStream: true,
		}),
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 50 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: maxBackoff},
			MinConnectTimeout: LinkTimeout(cfg),
		}),
	}
}

func linkServerOptions(cfg Config) []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.InitialWindowSize(flowWindow),
		grpc.InitialConnWindowSize(flowWindow),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: keepaliveEvery / 2, PermitWithoutStream: true}),
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: keepaliveEvery, Timeout: LinkTimeout(cfg)}),
	}
}

func (t *grpcTransport) send(msgs []Message) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	// Wake only the senders that got something: a Ready often addresses
	// one peer (a vote request, a reply), and a wake-up with an empty
	// queue is a goroutine switch for nothing.
	var woken [64]*peerSender // members are at most 64
	nw, all := 0, false
	for i := range msgs {
		p := t.peers[msgs[i].To]
		if p == nil {
			continue
		}
		p.enqueue(msgs[i])
		switch {
		case nw > 0 && woken[nw-1] == p, slices.Contains(woken[:nw], p):
		case nw < len(woken):
			woken[nw] = p
			nw++
		default:
			all = true
		}
	}
	if all {
		for _, p := range t.peers {
			p.signal()
		}
		return
	}
	for _, p := range woken[:nw] {
		p.signal()
	}
}

func (t *grpcTransport) close() {
	t.mu.Lock()
	for _, p := range t.peers {
		p.cancel()
	}
	t.mu.Unlock()
	t.wg.Wait()
}

type peerSender struct {
	id     uint32
	addr   string
	opts   []grpc.DialOption
	log    *slog.Logger
	wake   chan struct{}
	ctx    context.Context
	cancel context.CancelFunc

	mu    sync.Mutex
	queue []Message
}

func (p *peerSender) enqueue(m Message) {
	p.mu.Lock()
	if len(p.queue) < maxQueuedPerPeer {
		p.queue = append(p.queue, m)
	}
	p.mu.Unlock()
}

func (p *peerSender) signal() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

func (p *peerSender) take() []Message {
	p.mu.Lock()
	defer p.mu.Unlock()
	q := p.queue
	p.queue = nil
	return q
}

func (p *peerSender) run() {
	var conn *grpc.ClientConn
	var stream grpc.ClientStreamingClient[pb.PaxosBatch, pb.PaxosEmpty]
	defer func() {
		if conn != nil {
			conn.Close()
		}
	}()
	backoff := 10 * time.Millisecond
	for {
		select {
		case <-p.ctx.Done():
			return
		case <-p.wake:
		}
		msgs := p.take()
		if len(msgs) == 0 {
			continue
		}
		if stream == nil {
			var err error
			if conn == nil {
				if conn, err = grpc.NewClient(p.addr, p.opts...); err != nil {
					p.log.Warn("paxos dial", "addr", p.addr, "err", err)
					p.sleep(maxBackoff)
					continue
				}
			}
			if stream, err = pb.NewPaxosPeerClient(conn).Send(p.ctx); err != nil {
				stream = nil
				p.sleep(backoff)
				backoff = min(2*backoff, maxBackoff)
				continue
			}
		}
		if err := p.sendAll(stream, msgs); err != nil {
			if !errors.Is(err, io.EOF) && p.ctx.Err() == nil {
				p.log.Debug("paxos stream broken", "err", err)
			}
			stream = nil
			p.sleep(backoff)
			backoff = min(2*backoff, maxBackoff)
			continue
		}
		backoff = 10 * time.Millisecond
	}
}

func (p *peerSender) sendAll(stream grpc.ClientStreamingClient[pb.PaxosBatch, pb.PaxosEmpty], msgs []Message) error {
	batch := &pb.PaxosBatch{}
	size := 0
	for i := range msgs {
		batch.Messages = append(batch.Messages, messageToProto(&msgs[i]))
		size += messageSize(&msgs[i])
		if size >= maxBatchBytes {
			if err := stream.Send(batch); err != nil {
				return err
			}
			batch, size = &pb.PaxosBatch{}, 0
		}
	}
	if len(batch.Messages) > 0 {
		return stream.Send(batch)
	}
	return nil
}

func (p *peerSender) sleep(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.ctx.Done():
	case <-t.C:
	}
}

// PeerAuth is who the transport under an incoming Send stream has
// authenticated the far end as (binlogd: the node id in the peer's TLS
// certificate). The caller's gRPC interceptor attaches it with
// WithPeerAuth; Send then drops every message whose From is not ID, so a
// node can speak only for itself. Without it (plain links, tests) From is
// trusted as sent.
type PeerAuth struct {
	ID uint32
	// Forged, if set, is called for each message dropped because its From
	// (claimed) is not ID; it must not block.
	Forged func(claimed uint32)
}

type peerAuthKey struct{}

// WithPeerAuth returns ctx carrying a for the Send stream it belongs to.
func WithPeerAuth(ctx context.Context, a PeerAuth) context.Context {
	return context.WithValue(ctx, peerAuthKey{}, a)
}

// peerServer receives peers' streams.
type peerServer struct {
	pb.UnimplementedPaxosPeerServer
	n *Node
}

func registerPeerService(s *grpc.Server, n *Node) {
	pb.RegisterPaxosPeerServer(s, &peerServer{n: n})
}

func (s *peerServer) Send(stream grpc.ClientStreamingServer[pb.PaxosBatch, pb.PaxosEmpty]) error {
	auth, authOK := stream.Context().Value(peerAuthKey{}).(PeerAuth)
	for {
		b, err := stream.Recv()
		if err == io.EOF {
			return stream.SendAndClose(&pb.PaxosEmpty{})
		}
		if err != nil {
			return err
		}
		ms := make([]Message, 0, len(b.Messages))
		for _, pm := range b.Messages {
			if authOK && pm.From != auth.ID {
				// A peer speaking for another node: with TLS, its
				// certificate says who it is; From is only what it claims.
				if auth.Forged != nil {
					auth.Forged(pm.From)
				}
				continue
			}
			if m, ok := messageFromProto(pm); ok {
				ms = append(ms, m)
			}
		}
		if err := s.n.deliver(ms); err != nil {
			return err
		}
	}
}
