package events

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"phxgo/binlogd/cpuprio"
)

// HookConfig is the command run for every event, like Orchestrator's
// recovery hooks. Argv is run directly (no shell; use
// ["/bin/sh","-c","..."] for one) with the event as one JSON object on
// stdin and PHXGO_EVENT_KIND / PHXGO_EVENT_NODE in its environment.
type HookConfig struct {
	Argv    []string
	Timeout time.Duration // per run; DefaultHookTimeout if 0
	// Queue bounds the events waiting for the hook; HookQueueBound if 0.
	Queue int
}

// DefaultHookTimeout bounds one hook run.
const DefaultHookTimeout = 10 * time.Second

// maxHookOutput is how much of a hook's output is logged.
const maxHookOutput = 4 << 10

// hookRunner runs the hook for queued events, one at a time.
type hookRunner struct {
	cfg   HookConfig
	log   *slog.Logger
	queue chan Event // nil: no hook
	stop  chan struct{}
	done  chan struct{}
	once  sync.Once

	runs    *prometheus.CounterVec // result: ok, failed, timeout
	dropped prometheus.Counter
	seconds prometheus.Histogram

	// ran, if set (tests), is called after each run.
	ran func(Event, error)
}

func newHookRunner(cfg *HookConfig, log *slog.Logger) *hookRunner {
	h := &hookRunner{log: log, stop: make(chan struct{}), done: make(chan struct{}),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "phxgo", Subsystem: "binlogd", Name: "event_hook_runs_total",
			Help: "event hook runs, by result (ok, failed, timeout)"}, []string{"result"}),
		dropped: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "phxgo", Subsystem: "binlogd", Name: "event_hook_dropped_total",
			Help: "events not given to the hook because its queue was full (the hook is slow or hangs)"}),
		seconds: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "phxgo", Subsystem: "binlogd", Name: "event_hook_duration_seconds",
			Help: "event hook run time", Buckets: prometheus.ExponentialBuckets(0.01, 4, 8)}),
	}
	for _, r := range []string{"ok", "failed", "timeout"} {
		h.runs.WithLabelValues(r)
	}
	if cfg == nil || len(cfg.Argv) == 0 {
		close(h.done)
		return h
	}
	h.cfg = *cfg
	if h.cfg.Timeout <= 0 {
		h.cfg.Timeout = DefaultHookTimeout
	}
	if h.cfg.Queue <= 0 {
		h.cfg.Queue = HookQueueBound
	}
	h.queue = make(chan Event, h.cfg.Queue)
	go h.loop()
	return h
}

func (h *hookRunner) collectors() []prometheus.Collector {
	return []prometheus.Collector{h.runs, h.dropped, h.seconds}
}

func (h *hookRunner) enqueue(ev Event) {
	if h.queue == nil {
		return
	}
	select {
	case h.queue <- ev:
	default:
		h.dropped.Inc()
		h.log.Warn("event hook queue full; event not given to the hook", "kind", string(ev.Kind), "seq", ev.Seq, "bound", h.cfg.Queue)
	}
}

func (h *hookRunner) close() {
	h.once.Do(func() { close(h.stop) })
	<-h.done
}

func (h *hookRunner) loop() {
	defer close(h.done)
	for {
		select {
		case <-h.stop:
			return
		case ev := <-h.queue:
			err := h.run(ev)
			if h.ran != nil {
				h.ran(ev, err)
			}
		}
	}
}

// errHookTimeout: the hook ran past its timeout and was killed.
var errHookTimeout = errors.New("event hook timed out")

// run runs the hook once for ev. The command gets its own process group
// so that a timeout kills what it started too (a shell's children would
// otherwise hold its output open).
func (h *hookRunner) run(ev Event) error {
	in, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), h.cfg.Timeout)
	defer cancel()
	go func() { // Close stops a running hook too
		select {
		case <-h.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	cmd := exec.CommandContext(ctx, h.cfg.Argv[0], h.cfg.Argv[1:]...)
	cmd.Stdin = bytes.NewReader(append(in, '\n'))
	cmd.Env = append(cmd.Environ(), "PHXGO_EVENT_KIND="+string(ev.Kind), "PHXGO_EVENT_NODE="+itoa(ev.Node))
	var out limitedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	start := time.Now()
	err = cpuprio.RunChild(cmd) // at mysql_nice, not binlogd's own raised value
	took := time.Since(start)
	h.seconds.Observe(took.Seconds())
	attrs := []any{"kind", string(ev.Kind), "seq", ev.Seq, "took", took.Round(time.Millisecond), "output", out.String()}
	switch {
	case ctx.Err() == context.DeadlineExceeded:
		h.runs.WithLabelValues("timeout").Inc()
		h.log.Warn("event hook timed out; killed", append(attrs, "timeout", h.cfg.Timeout)...)
		return errHookTimeout
	case err != nil:
		h.runs.WithLabelValues("failed").Inc()
		h.log.Warn("event hook failed", append(attrs, "err", err)...)
		return err
	}
	h.runs.WithLabelValues("ok").Inc()
	h.log.Info("event hook ran", attrs...)
	return nil
}

func itoa(n uint32) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// limitedBuffer keeps the first maxHookOutput bytes written to it.
type limitedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
	cut bool
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if room := maxHookOutput - l.buf.Len(); room < len(p) {
		l.buf.Write(p[:max(room, 0)])
		l.cut = true
	} else {
		l.buf.Write(p)
	}
	return len(p), nil
}

func (l *limitedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.buf.String()
	if l.cut {
		s += " …(cut)"
	}
	return s
}
