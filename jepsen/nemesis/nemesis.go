package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"phxgo/jepsen/cluster"
	"phxgo/jepsen/netns"
)

// Fault kinds.
const (
	Kill      = "kill"
	Pause     = "pause"
	Partition = "partition"
	Restart   = "restart"
	All       = "all"
)

// Kinds is every fault kind, in a fixed order (files adding a kind append
// to it with register, in their init).
var Kinds = []string{Kill, Pause, Partition, Restart}

// injectors are the kinds added by register, each in its own file.
var injectors = map[string]func(n *Nemesis, ctx context.Context) (*Active, error){}

// register adds a fault kind injected by inject; called from init.
func register(kind string, inject func(n *Nemesis, ctx context.Context) (*Active, error)) {
	Kinds = append(Kinds, kind)
	injectors[kind] = inject
}

// Errors.
var (
	// ErrUnknownKind: a -nemesis name that is none of Kinds or "all".
	ErrUnknownKind = errors.New("unknown nemesis")
	// ErrNoPartitioner: partition faults asked for without a Partitioner.
	ErrNoPartitioner = errors.New("partition nemesis needs a partitioner")
)

// ParseKinds parses a comma list ("kill,pause", "all", "none" or "").
func ParseKinds(s string) ([]string, error) {
	var out []string
	for _, k := range strings.Split(s, ",") {
		k = strings.TrimSpace(k)
		switch {
		case k == "" || k == "none":
		case k == All:
			out = append(out, Kinds...)
		case slices.Contains(Kinds, k) || injectors[k] != nil: // or an opt-in kind (power.go)
			out = append(out, k)
		default:
			return nil, fmt.Errorf("%w %q (want %s, all or none)", ErrUnknownKind, k, strings.Join(Kinds, ", "))
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// Partitioner cuts and heals links between node addresses (netns.NS).
type Partitioner interface {
	CutLinks(ctx context.Context, links []netns.Link) error
	Heal(ctx context.Context) error
}

// Active is an injected fault awaiting its heal.
type Active struct {
	Kind string
	Desc string
	// MinHold is the least time to hold the fault (pauses: beyond the lease).
	MinHold time.Duration
	heal    func(ctx context.Context) error
}

// Heal undoes the fault.
func (a *Active) Heal(ctx context.Context) error {
	if a.heal == nil {
		return nil
	}
	return a.heal(ctx)
}

// Nemesis picks and injects faults. Not safe for concurrent Inject calls.
type Nemesis struct {
	c     cluster.Cluster
	p     Partitioner
	rng   *rand.Rand
	lease time.Duration
	// crashes counts kill-majority faults: they alternate between a
	// majority and every node (crash.go).
	crashes int
	// powers counts power faults: one node, a majority, all (power.go).
	powers int
}

// New returns a Nemesis over c; p may be nil if no partitions are wanted.
func New(c cluster.Cluster, p Partitioner, seed uint64, lease time.Duration) *Nemesis {
	return &Nemesis{c: c, p: p, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), lease: lease}
}

// Inject starts one fault of the given kind.
func (n *Nemesis) Inject(ctx context.Context, kind string) (*Active, error) {
	switch kind {
	case Kill:
		return n.kill(ctx)
	case Pause:
		return n.pause(ctx)
	case Partition:
		return n.partition(ctx)
	case Restart:
		return n.rollingRestart(ctx)
	}
	if inject, ok := injectors[kind]; ok {
		return inject(n, ctx)
	}
	return nil, fmt.Errorf("%w %q", ErrUnknownKind, kind)
}

func (n *Nemesis) ids() []uint32 {
	var ids []uint32
	for _, nd := range n.c.Nodes() {
		ids = append(ids, nd.ID)
	}
	return ids
}

func (n *Nemesis) host(id uint32) string {
	for _, nd := range n.c.Nodes() {
		if nd.ID == id {
			return nd.Host
		}
	}
	return ""
}

func (n *Nemesis) randomNode() uint32 {
	ids := n.ids()
	return ids[n.rng.IntN(len(ids))]
}

// target returns the master (with probability pMaster, if one is known) or
// a random node, and a word saying which.
func (n *Nemesis) target(ctx context.Context, pMaster float64) (uint32, string) {
	if n.rng.Float64() < pMaster {
		mctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		m, err := n.c.Master(mctx)
		cancel()
		if err == nil {
			return m, "master"
		}
	}
	return n.randomNode(), "node"
}

// witness reports whether node id is a witness (binlogd only).
func (n *Nemesis) witness(id uint32) bool {
	for _, nd := range n.c.Nodes() {
		if nd.ID == id {
			return nd.Witness
		}
	}
	return false
}

func (n *Nemesis) kill(ctx context.Context) (*Active, error) {
	id, who := n.target(ctx, 0.5)
	if n.witness(id) {
		who = "witness"
	}
	var what string
	var err error
	switch v := n.rng.IntN(3); {
	case n.witness(id): // its binlogd is all it runs (v drawn all the same: the schedule stays the seed's)
		what, err = "binlogd", n.c.KillBinlogd(id)
	case v == 0:
		what, err = "mysqld", n.c.KillMysqld(id)
	case v == 1:
		what, err = "binlogd", n.c.KillBinlogd(id)
	default:
		what, err = "mysqld+binlogd+sqlproxy", n.c.KillNode(id)
	}
	a := &Active{Kind: Kill, Desc: fmt.Sprintf("kill -9 %s on %s n%d", what, who, id),
		heal: func(ctx context.Context) error { return n.c.Restart(ctx, id) }}
	if err != nil {
		return a, fmt.Errorf("%s: %w", a.Desc, err)
	}
	return a, nil
}

func (n *Nemesis) pause(ctx context.Context) (*Active, error) {
	id, who := n.target(ctx, 0.75)
	whole := n.rng.IntN(2) == 0
	what := "binlogd"
	if whole {
		what = "all processes"
	}
	if n.witness(id) {
		who, what = "witness", "binlogd" // all it runs
	}
	a := &Active{Kind: Pause, Desc: fmt.Sprintf("SIGSTOP %s on %s n%d", what, who, id),
		MinHold: 2 * n.lease,
		heal:    func(context.Context) error { return n.c.Resume(id) }}
	if err := n.c.Pause(id, whole); err != nil {
		return a, fmt.Errorf("%s: %w", a.Desc, err)
	}
	return a, nil
}

func (n *Nemesis) partition(ctx context.Context) (*Active, error) {
	if n.p == nil {
		return nil, ErrNoPartitioner
	}
	ids := n.ids()
	var desc string
	var cut [][2]uint32
	switch v := n.rng.IntN(4); {
	case v == 0 || v == 1:
		id, who := n.randomNode(), "node"
		if v == 1 {
			id, who = n.target(ctx, 1)
		}
		desc = fmt.Sprintf("isolate %s n%d", who, id)
		cut = isolate(ids, id)
	case v == 3 && len(ids) >= 4:
		ring := shuffled(n.rng, ids)
		desc = fmt.Sprintf("majorities ring %v", ring)
		cut = majorityRing(ring)
	default:
		ring := shuffled(n.rng, ids)
		minority, majority := ring[:len(ring)/2], ring[len(ring)/2:]
		desc = fmt.Sprintf("halves %v | %v", minority, majority)
		cut = bridgeless(minority, majority)
	}
	links := make([]netns.Link, 0, len(cut))
	for _, c := range cut {
		links = append(links, netns.Link{n.host(c[0]), n.host(c[1])})
	}
	a := &Active{Kind: Partition, Desc: "partition: " + desc, heal: n.p.Heal}
	if err := n.p.CutLinks(ctx, links); err != nil {
		return a, fmt.Errorf("%s: %w", a.Desc, err)
	}
	return a, nil
}

func (n *Nemesis) rollingRestart(ctx context.Context) (*Active, error) {
	order := shuffled(n.rng, n.ids())
	a := &Active{Kind: Restart, Desc: fmt.Sprintf("rolling restart %v", order)}
	for _, id := range order {
		if err := n.c.KillNode(id); err != nil {
			return a, fmt.Errorf("%s: kill n%d: %w", a.Desc, id, err)
		}
		if err := n.c.Restart(ctx, id); err != nil {
			return a, fmt.Errorf("%s: restart n%d: %w", a.Desc, id, err)
		}
		wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		err := n.c.WaitHealthy(wctx)
		cancel()
		if err != nil {
			return a, fmt.Errorf("%s: n%d not healthy after restart: %w", a.Desc, id, err)
		}
	}
	return a, nil
}

// HealAll undoes anything a fault may have left: partitions flushed, every
// node resumed and restarted. Used at the end of a run.
func (n *Nemesis) HealAll(ctx context.Context) error {
	var errs []error
	if n.p != nil {
		errs = append(errs, n.p.Heal(ctx))
	}
	for _, id := range n.ids() {
		errs = append(errs, n.c.Resume(id))
	}
	for _, id := range n.ids() {
		errs = append(errs, n.c.Restart(ctx, id))
	}
	return errors.Join(errs...)
}
