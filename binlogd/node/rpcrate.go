package node

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"time"

	"phxgo/binlogd/config"
	"phxgo/internal/addrrate"
)

// A stranger's ClientHello costs binlogd the TLS handshake's key
// exchange, about 300 µs of CPU, before the handshake can fail for want
// of a certificate: 5,000 a second from one address took 0.8-1.5 of a
// core and starved the Paxos engine on the node (audit, December 2026),
// and the caps of rpcguard.go bound memory, not CPU. So the gRPC port
// gives each source address a budget of new connections, checked at
// accept before any TLS work (package addrrate): one over it is closed
// at once, counted in phxgo_binlogd_grpc_handshakes_ratelimited_total.
//
// The budget applies only under pressure, when the whole node's rate of
// new connections from non-members exceeds rpcPressureRate: normal
// operation refuses nobody, however many clients share one address. The
// members' addresses (their grpc_addr, mysql_addr and proxy_addr hosts,
// as the log's membership knows them) are exempt: a peer, its proxies
// and its admin commands get in during a flood from anywhere else.
const (
	// rpcHandshakeRate and rpcHandshakeBurst are each address's budget:
	// a cluster's clients make a handful of connections, a reconnect
	// storm after a partition a few dozen, a flood thousands a second.
	// 20 handshakes a second cost 0.6% of a core.
	rpcHandshakeRate  = 20
	rpcHandshakeBurst = 64
	// rpcPressureRate and rpcPressureBurst: below 100 new connections a
	// second (3% of a core in key exchanges), after a burst of the
	// handshakes' cap, nobody is refused.
	rpcPressureRate  = 100
	rpcPressureBurst = maxRPCHandshakes
	// rpcRateAddrs bounds the addresses with a budget of their own
	// (about 100 bytes each).
	rpcRateAddrs = 4096
	// peerIPsCheckEvery is how often the membership is checked for a
	// change of the exempt addresses.
	peerIPsCheckEvery = time.Second
	// peerIPsLookupTimeout bounds the DNS lookups of members' host names.
	peerIPsLookupTimeout = 2 * time.Second
)

func rpcHandshakeBudget() addrrate.Config {
	return addrrate.Config{Rate: rpcHandshakeRate, Burst: rpcHandshakeBurst,
		PressureRate: rpcPressureRate, PressureBurst: rpcPressureBurst, MaxAddrs: rpcRateAddrs}
}

// memberIPs are the IPs of members' grpc_addr, mysql_addr and proxy_addr
// hosts, sorted, each once: an IP as written, a name through lookup. A
// name that does not resolve is left out, and its error returned.
func memberIPs(ctx context.Context, members []config.Member, lookup func(context.Context, string) ([]netip.Addr, error)) ([]netip.Addr, error) {
	var ips []netip.Addr
	var errs []error
	for _, m := range members {
		for _, a := range []string{m.GRPCAddr, m.MySQLAddr, m.ProxyAddr} {
			host, _, err := net.SplitHostPort(a)
			if err != nil || host == "" {
				continue
			}
			if ip, err := netip.ParseAddr(host); err == nil {
				ips = append(ips, ip.Unmap())
				continue
			}
			got, err := lookup(ctx, host)
			if err != nil {
				errs = append(errs, fmt.Errorf("member %d's %s: %w", m.ID, a, err))
				continue
			}
			for _, ip := range got {
				ips = append(ips, ip.Unmap())
			}
		}
	}
	slices.SortFunc(ips, netip.Addr.Compare)
	return slices.Compact(ips), errors.Join(errs...)
}

func lookupHost(ctx context.Context, host string) ([]netip.Addr, error) {
	return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
}

// refreshPeerIPs sets the members' addresses as the exempt ones.
func (n *Node) refreshPeerIPs(ctx context.Context) {
	if n.hsLimit == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, peerIPsLookupTimeout)
	defer cancel()
	ips, err := memberIPs(ctx, n.members(), lookupHost)
	if err != nil {
		n.log.Warn("gRPC port: a member's host name did not resolve; connections from it count against the budget of handshakes like a stranger's", "err", err)
	}
	n.hsLimit.SetExempt(ips)
	n.log.Debug("gRPC port: members' addresses exempt from the budget of handshakes", "ips", fmt.Sprint(ips))
}

// watchPeerIPs refreshes the exempt addresses when the log's membership
// changes and at each Reload (a host name may resolve elsewhere now).
func (n *Node) watchPeerIPs(ctx context.Context) {
	if n.hsLimit == nil {
		return
	}
	// Index stays 0 from the config's seed to the log's initial
	// members (a joining node): the count tells them apart.
	version := func() [2]uint64 {
		m, _ := n.px.Membership()
		return [2]uint64{m.Index, uint64(len(m.Members))}
	}
	at := version()
	t := time.NewTicker(peerIPsCheckEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-n.peerIPsKick:
		case <-t.C:
			if version() == at {
				continue
			}
		}
		at = version()
		n.refreshPeerIPs(ctx)
	}
}

// kickPeerIPs asks watchPeerIPs for a refresh (Reload).
func (n *Node) kickPeerIPs() {
	select {
	case n.peerIPsKick <- struct{}{}:
	default:
	}
}
