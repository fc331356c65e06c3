package events

import (
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Sizes. A ring of 256 covers many failovers; a subscriber buffer of 64
// absorbs a burst (a failover publishes a handful).
const (
	RingSize       = 256
	SubscriberBuf  = 64
	HookQueueBound = 64
)

// ErrSlowSubscriber ends a subscription whose reader fell more than
// SubscriberBuf events behind: Publish does not wait for readers.
var ErrSlowSubscriber = errors.New("events: subscriber too slow, cut off (reconnect to read the recent events again)")

// Options configure a Bus. The zero value is valid: no hook, slog.Default.
type Options struct {
	Node   uint32
	Logger *slog.Logger
	// Hook, if set, runs for every event (hook.go).
	Hook *HookConfig
	// Registerer, if set, gets the Bus's metrics.
	Registerer prometheus.Registerer
}

// Bus is one node's events: see the package doc.
type Bus struct {
	node uint32
	log  *slog.Logger
	hook *hookRunner

	mu   sync.Mutex
	seq  uint64
	ring []Event // oldest first, at most RingSize
	subs map[*Subscription]struct{}

	total       *prometheus.CounterVec // kind
	subsDropped prometheus.Counter
}

// New makes a Bus; Close stops its hook runner.
func New(o Options) *Bus {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	b := &Bus{node: o.Node, log: o.Logger, subs: map[*Subscription]struct{}{},
		total: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "phxgo", Subsystem: "binlogd", Name: "events_total",
			Help: "events published (role changes, failovers, fences, ...; binlogd/events), by kind"}, []string{"kind"}),
		subsDropped: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "phxgo", Subsystem: "binlogd", Name: "event_subscribers_dropped_total",
			Help: "event streams cut off because their reader fell behind"}),
	}
	for _, k := range Kinds {
		b.total.WithLabelValues(string(k))
	}
	b.hook = newHookRunner(o.Hook, o.Logger)
	if o.Registerer != nil {
		for _, c := range append([]prometheus.Collector{b.total, b.subsDropped}, b.hook.collectors()...) {
			if err := o.Registerer.Register(c); err != nil {
				o.Logger.Warn("event metrics", "err", err)
			}
		}
	}
	return b
}

// Close stops the hook runner after the command running now (if any)
// ends or times out; events still queued are not run.
func (b *Bus) Close() { b.hook.close() }

// Publish records ev: it sets Seq, Node and (if zero) Time, logs it,
// keeps it in the ring, hands it to subscribers and the hook queue. It
// never blocks on readers or on the hook.
func (b *Bus) Publish(ev Event) Event {
	if ev.Time.IsZero() {
		ev.Time = time.Now()
	}
	if ev.Node == 0 {
		ev.Node = b.node
	}
	b.mu.Lock()
	b.seq++
	ev.Seq = b.seq
	if len(b.ring) == RingSize {
		copy(b.ring, b.ring[1:])
		b.ring = b.ring[:RingSize-1]
	}
	b.ring = append(b.ring, ev)
	for s := range b.subs {
		select {
		case s.ch <- ev:
		default:
			delete(b.subs, s)
			s.err = ErrSlowSubscriber
			close(s.ch)
			b.subsDropped.Inc()
		}
	}
	b.mu.Unlock()

	b.total.WithLabelValues(string(ev.Kind)).Inc()
	attrs := []any{"kind", string(ev.Kind), "seq", ev.Seq, "epoch", ev.Epoch, "master", ev.Master}
	for k, v := range ev.Details {
		attrs = append(attrs, k, v)
	}
	b.log.Info("event", attrs...)
	b.hook.enqueue(ev)
	return ev
}

// Recent returns a copy of the ring, oldest first.
func (b *Bus) Recent() []Event {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]Event(nil), b.ring...)
}

// Subscription is one reader of live events.
type Subscription struct {
	b   *Bus
	ch  chan Event
	err error // set (under b.mu) before ch is closed by the Bus
}

// Subscribe returns the events in the ring now and a subscription that
// receives every event published after them.
func (b *Bus) Subscribe() ([]Event, *Subscription) {
	s := &Subscription{b: b, ch: make(chan Event, SubscriberBuf)}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.subs[s] = struct{}{}
	return append([]Event(nil), b.ring...), s
}

// C delivers live events; it is closed when the Bus cut the subscription
// off (Err says why). Close does not close it.
func (s *Subscription) C() <-chan Event { return s.ch }

// Err is why C was closed (ErrSlowSubscriber), nil before that.
func (s *Subscription) Err() error {
	s.b.mu.Lock()
	defer s.b.mu.Unlock()
	return s.err
}

// Close ends the subscription.
func (s *Subscription) Close() {
	s.b.mu.Lock()
	defer s.b.mu.Unlock()
	delete(s.b.subs, s)
}
