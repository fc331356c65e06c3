package netns

import (
	"context"
	"fmt"
	"net"
	"strings"
)

// Separate machines on one box: a bridge namespace holds a Linux bridge,
// and each "host" namespace gets a veth pair whose far end is a port of
// that bridge. The hosts then share one L2 segment (a /24 of their own,
// with no default route: nothing leaves it) and nothing else; each keeps
// its own loopback, so 127.0.0.1 on one host is not 127.0.0.1 on another.
//
//	host ns h1            bridge ns br                host ns h2
//	lo 127.0.0.1          ┌──────────────┐            lo 127.0.0.1
//	eth0 10.x.y.1 ◀─veth─▶│ p1  br0   p2 │◀─veth─▶   eth0 10.x.y.2
//	                      └──────────────┘
//
// Both ends of every pair are created inside namespaces (ip -n NS link add
// ... peer ... netns BR), so the root namespace gets no interface.
// Cutting a host off is SetPort(host, false): its bridge port goes down,
// as if its cable were pulled; its own processes keep running.

// BridgeName is the bridge device inside the bridge namespace.
const BridgeName = "br0"

// HostIf is the interface name each host sees (its end of the veth pair).
const HostIf = "eth0"

// Bridge is a bridge namespace and the hosts attached to it.
type Bridge struct {
	NS    *NS
	ports map[string]string // host namespace name -> its port in the bridge ns
}

// CreateBridge creates namespace name with a bridge in it, up.
func CreateBridge(ctx context.Context, name string) (*Bridge, error) {
	ns, err := Create(ctx, name)
	if err != nil {
		return nil, err
	}
	b := &Bridge{NS: ns, ports: map[string]string{}}
	for _, args := range [][]string{
		{"link", "add", BridgeName, "type", "bridge"},
		{"link", "set", BridgeName, "up"},
	} {
		if err := run(ctx, "ip", append([]string{"-n", name}, args...)...); err != nil {
			_ = ns.Close()
			return nil, err
		}
	}
	return b, nil
}

// Attach gives host a veth into the bridge with address cidr (e.g.
// 10.231.18.1/24) on HostIf, both ends up. port names the bridge's end
// (unique in the bridge namespace, at most 15 bytes).
func (b *Bridge) Attach(ctx context.Context, host *NS, port, cidr string) error {
	if _, _, err := net.ParseCIDR(cidr); err != nil {
		return fmt.Errorf("netns: attach %s: %w", host.Name, err)
	}
	if port == "" || len(port) > 15 || strings.ContainsAny(port, "/ \t\n") {
		return fmt.Errorf("%w: port %q", ErrBadName, port)
	}
	steps := [][]string{
		{"-n", host.Name, "link", "add", HostIf, "type", "veth", "peer", "name", port, "netns", b.NS.Name},
		{"-n", host.Name, "addr", "add", cidr, "dev", HostIf},
		{"-n", host.Name, "link", "set", HostIf, "up"},
		{"-n", b.NS.Name, "link", "set", port, "master", BridgeName},
		{"-n", b.NS.Name, "link", "set", port, "up"},
	}
	for _, s := range steps {
		if err := run(ctx, "ip", s...); err != nil {
			return err
		}
	}
	b.ports[host.Name] = port
	return nil
}

// SetPort brings host's bridge port up or down: down cuts the host off
// every other host (its packets go nowhere, theirs never arrive).
func (b *Bridge) SetPort(ctx context.Context, host *NS, up bool) error {
	port, ok := b.ports[host.Name]
	if !ok {
		return fmt.Errorf("netns: %s is not attached to bridge %s", host.Name, b.NS.Name)
	}
	state := "down"
	if up {
		state = "up"
	}
	return run(ctx, "ip", "-n", b.NS.Name, "link", "set", port, state)
}

// Close deletes the bridge namespace (the veth pairs go with it).
func (b *Bridge) Close() error { return b.NS.Close() }

// RemoveStaleGroup deletes namespaces named prefix<pid>-<anything> whose
// pid is no longer alive (a group of namespaces one run created, such as a
// bridge and its hosts), killing whatever still runs in them.
func RemoveStaleGroup(ctx context.Context, prefix string) ([]string, error) {
	return removeStale(ctx, prefix, func(rest string) string {
		pid, _, _ := strings.Cut(rest, "-")
		return pid
	})
}
