package config

import (
	"os/exec"
	"path/filepath"
	"time"
)

// Events configures the event hook (binlogd/events): a command run for
// every event (role change, failover, fence, ...) with the event as JSON
// on stdin, like Orchestrator's recovery hooks. It never blocks the node:
// a run past event_hook_timeout is killed, and events that find the
// hook's queue full are dropped and counted.
type Events struct {
	// event_hook: argv of the command, run without a shell (use
	// ["/bin/sh","-c","..."] for one); empty: no hook.
	EventHook []string `json:"event_hook,omitempty"`
	// event_hook_timeout: bound on one run (default 10s).
	EventHookTimeout Duration `json:"event_hook_timeout,omitempty"`
}

// maxEventHookTimeout: one run must not hold up later events for long.
const maxEventHookTimeout = 10 * time.Minute

func (c *Config) validateEvents() error {
	e := c.Events
	if e.EventHookTimeout.Duration < 0 || e.EventHookTimeout.Duration > maxEventHookTimeout {
		return c.bad("event_hook_timeout", "%v must be between 0 (default 10s) and %v", e.EventHookTimeout.Duration, maxEventHookTimeout)
	}
	if len(e.EventHook) == 0 {
		return nil
	}
	prog := e.EventHook[0]
	if prog == "" {
		return c.bad("event_hook", "the program (first element) is empty")
	}
	if filepath.IsAbs(prog) {
		return nil // checked when run: the file may appear later (config management)
	}
	if _, err := exec.LookPath(prog); err != nil {
		return c.bad("event_hook", "program %q: %v (give an absolute path)", prog, err)
	}
	return nil
}
