package rolectl

import (
	"fmt"
	"strings"
	"testing"
)

// acts renders actions as "a b c" for the table.
func acts(as []Action) string {
	out := make([]string, len(as))
	for i, a := range as {
		out[i] = a.String()
	}
	return strings.Join(out, " ")
}

var (
	ready   = Obs{LeaseMaster: true, LeaseEpoch: 7, CaughtUp: true, MySQLUp: true}
	noLease = Obs{MySQLUp: true, CaughtUp: true}
)

func with(o Obs, f func(*Obs)) Obs { f(&o); return o }

func master(e uint64) State {
	return State{Phase: Master, Epoch: e, Obs: with(ready, func(o *Obs) { o.LeaseEpoch = e }), Supervise: true, ServedWrites: true, Armed: true}
}

func replica(o Obs) State { return State{Phase: Replica, Obs: o, Supervise: true} }

// armed is a demoted master whose semi-sync is not released yet.
func armed(o Obs) State { s := replica(o); s.ServedWrites, s.Armed = true, true; return s }

// Every transition of the controller: from a state, one event, to the
// next state and exactly these actions.
func TestStepTable(t *testing.T) {
	stopped := State{Phase: Stopped, Supervise: true}
	handoff := State{Phase: Stopped, Supervise: true, Handoff: true}
	tests := []struct {
		name    string
		from    State
		ev      Event
		to      string
		actions string
	}{
		// Promotion.
		{"replica takes a ready lease", replica(noLease), Observed{ready}, "master(epoch 7)",
			"lead_paxos make_durable open_writes start_capture(7)"},
		{"ready lease but MariaDB behind: fence", replica(noLease), Observed{with(ready, func(o *Obs) { o.CaughtUp = false })}, "replica", "fence"},
		{"ready lease, MariaDB down", replica(noLease), Observed{with(ready, func(o *Obs) { o.MySQLUp = false })}, "replica", ""},
		{"ready lease, unsafe", replica(noLease), Observed{with(ready, func(o *Obs) { o.Unsafe = true })}, "replica", ""},
		{"ready lease, stopping", replica(noLease), Observed{with(ready, func(o *Obs) { o.Stopping = true })}, "replica", ""},
		{"candidate (lease not ready)", replica(noLease), Observed{with(ready, func(o *Obs) { o.LeaseMaster = false })}, "replica", ""},
		{"replica, no lease", replica(noLease), Observed{noLease}, "replica", ""},
		// A master keeps serving while its lease holds.
		{"master, lease holds", master(7), Observed{ready}, "master(epoch 7)", ""},
		{"master, MariaDB down: capture reports it", master(7), Observed{with(ready, func(o *Obs) { o.MySQLUp = false })}, "master(epoch 7)", ""},
		// Demotion.
		{"master loses its lease", master(7), Observed{noLease}, "replica", "read_only stop_capture check_quiet(1)"},
		{"master sees a new epoch", master(7), Observed{with(ready, func(o *Obs) { o.LeaseEpoch = 8 })}, "replica", "read_only stop_capture check_quiet(1)"},
		{"master marked unsafe", master(7), Observed{with(ready, func(o *Obs) { o.Unsafe = true })}, "replica", "read_only stop_capture check_quiet(1)"},
		{"step down requested", master(7), StepDown{"switchover"}, "replica", "read_only stop_capture check_quiet(1)"},
		{"step down as replica", replica(noLease), StepDown{"storage"}, "replica", ""},
		{"promotion failed", master(7), PromoteFailed{Epoch: 7, Why: "x"}, "replica", "read_only stop_capture fence check_quiet(1)"},
		{"promotion failed, unsafe", master(7), PromoteFailed{Epoch: 7, Why: "x", Unsafe: true}, "replica", "mark_unsafe read_only stop_capture fence check_quiet(1)"},
		{"promotion failed, old epoch", master(7), PromoteFailed{Epoch: 6}, "master(epoch 7)", ""},
		{"promotion failed, replica", replica(noLease), PromoteFailed{Epoch: 7}, "replica", ""},
		{"capture stopped", master(7), CaptureStopped{Epoch: 7, Why: "eof"}, "replica", "read_only stop_capture fence check_quiet(1)"},
		{"capture stopped, unsafe", master(7), CaptureStopped{Epoch: 7, Unsafe: true}, "replica", "mark_unsafe read_only stop_capture fence check_quiet(1)"},
		{"capture of an old term stopped", master(8), CaptureStopped{Epoch: 7}, "master(epoch 8)", ""},
		{"capture stopped, replica", replica(noLease), CaptureStopped{Epoch: 7}, "replica", ""},
		// A switchover quiesced the master and gave up: writes reopen only
		// through the controller, on a ready lease for the epoch served.
		{"switchover aborted, lease holds: reopen", master(7), SwitchoverAborted{ready}, "master(epoch 7)", "make_durable open_writes"},
		{"switchover aborted, master not caught up: reopen (it is the source)", master(7),
			SwitchoverAborted{with(ready, func(o *Obs) { o.CaughtUp = false })}, "master(epoch 7)", "make_durable open_writes"},
		{"switchover aborted, lease lost meanwhile: demote", master(7), SwitchoverAborted{noLease}, "replica", "read_only stop_capture check_quiet(1)"},
		{"switchover aborted, new epoch: demote", master(7), SwitchoverAborted{with(ready, func(o *Obs) { o.LeaseEpoch = 8 })}, "replica",
			"read_only stop_capture check_quiet(1)"},
		{"switchover aborted, unsafe: demote", master(7), SwitchoverAborted{with(ready, func(o *Obs) { o.Unsafe = true })}, "replica",
			"read_only stop_capture check_quiet(1)"},
		{"switchover aborted, MariaDB down: demote", master(7), SwitchoverAborted{with(ready, func(o *Obs) { o.MySQLUp = false })}, "replica",
			"read_only stop_capture check_quiet(1)"},
		{"switchover aborted, stopping: demote", master(7), SwitchoverAborted{with(ready, func(o *Obs) { o.Stopping = true })}, "replica",
			"read_only stop_capture check_quiet(1)"},
		{"switchover aborted after the controller demoted: stays read-only", armed(noLease), SwitchoverAborted{ready}, "replica", ""},
		{"switchover aborted, replica with a ready lease: no promotion by it", replica(noLease), SwitchoverAborted{ready}, "replica", ""},
		{"switchover aborted while stopping", stopped, SwitchoverAborted{ready}, "stopped", ""},
		// Waiting commits after a demotion.
		{"demoted, none waiting", replica(noLease), Waiting{Purpose: ForDemote, Known: true}, "replica", ""},
		{"demoted, commits waiting", replica(noLease), Waiting{Purpose: ForDemote, N: 2, Known: true}, "replica", "kill"},
		{"demoted, count unknown", replica(noLease), Waiting{Purpose: ForDemote}, "replica", "kill"},
		// A demoted master is proven quiet or killed (doc.go: the count
		// alone misses a commit between its read_only check and the wait).
		{"demoted, proven quiet: semi-sync stays on until release", armed(noLease), Quiet{Purpose: ForDemote, Proven: true}, "replica", ""},
		{"demoted, not proven quiet", armed(noLease), Quiet{Purpose: ForDemote, Why: "read_only barrier timed out"}, "replica", "kill"},
		{"demoted, not proven quiet, disarmed by the kill", armed(noLease), Quiet{Purpose: ForDemote}, "replica", "kill"},
		// Semi-sync goes off only by a release that proves the server quiet.
		{"repoint an armed replica: release first", armed(noLease), Repoint{noLease}, "replica", "release"},
		{"released: keep it a replica", armed(noLease), Released{OK: true}, "replica", "keep_replica"},
		{"not released: kill", armed(noLease), Released{Why: "binlog ahead"}, "replica", "kill"},
		{"released as master (late): ignored", master(7), Released{OK: true}, "master(epoch 7)", ""},
		{"armed replica shuts down", armed(noLease), Shutdown{}, "stopped", "check_quiet(2)"},
		{"armed replica shuts down for a handoff: release first", armed(noLease), Shutdown{Handoff: true}, "stopped", "release"},
		{"stopped for a handoff, released", State{Phase: Stopped, Supervise: true, Handoff: true, Armed: true}, Released{OK: true}, "stopped", "handoff"},
		{"stopped for a handoff, not released", State{Phase: Stopped, Supervise: true, Handoff: true, Armed: true}, Released{Why: "x"}, "stopped", "kill"},
		{"stopped, released", State{Phase: Stopped, Supervise: true, Armed: true}, Released{OK: true}, "stopped", "graceful_stop"},
		{"armed replica, not supervising, shuts down", func() State { s := armed(noLease); s.Supervise = false; return s }(), Shutdown{},
			"stopped", "check_quiet(1)"},
		{"stopped, proven quiet", stopped, Quiet{Purpose: ForShutdown, Proven: true}, "stopped", "graceful_stop"},
		{"stopped, not proven quiet", stopped, Quiet{Purpose: ForShutdown}, "stopped", "kill"},
		{"stopped, demote check not proven", stopped, Quiet{Purpose: ForDemote}, "stopped", "kill"},
		{"stopped, demote check proven", stopped, Quiet{Purpose: ForDemote, Proven: true}, "stopped", ""},
		// Keeping a replica a replica.
		{"repoint a replica", replica(noLease), Repoint{noLease}, "replica", "keep_replica"},
		{"no repoint with a ready lease", replica(noLease), Repoint{ready}, "replica", ""},
		{"no repoint, MariaDB down", replica(noLease), Repoint{with(noLease, func(o *Obs) { o.MySQLUp = false })}, "replica", ""},
		{"no repoint while stopping", replica(noLease), Repoint{with(noLease, func(o *Obs) { o.Stopping = true })}, "replica", ""},
		{"no repoint of a master", master(7), Repoint{ready}, "master(epoch 7)", ""},
		// Shutdown.
		{"master shuts down", master(7), Shutdown{}, "stopped", "read_only await_drained fence stop_capture check_quiet(2)"},
		{"master shuts down, not supervising", func() State { s := master(7); s.Supervise = false; return s }(), Shutdown{},
			"stopped", "read_only await_drained fence stop_capture check_quiet(1)"},
		{"replica shuts down", replica(noLease), Shutdown{}, "stopped", "count_waiting(2)"},
		{"replica shuts down, not supervising", State{Phase: Replica}, Shutdown{}, "stopped", ""},
		{"stopped, none waiting", stopped, Waiting{Purpose: ForShutdown, Known: true}, "stopped", "graceful_stop"},
		{"stopped, commits waiting", stopped, Waiting{Purpose: ForShutdown, N: 1, Known: true}, "stopped", "kill"},
		{"stopped, count unknown", stopped, Waiting{Purpose: ForShutdown}, "stopped", "kill"},
		{"stopped, demote count waiting", stopped, Waiting{Purpose: ForDemote, N: 1, Known: true}, "stopped", "kill"},
		{"stopped, demote count zero", stopped, Waiting{Purpose: ForDemote, Known: true}, "stopped", ""},
		{"stopped ignores a ready lease", stopped, Observed{ready}, "stopped", ""},
		{"stopped ignores repoint", stopped, Repoint{noLease}, "stopped", ""},
		{"stopped ignores step down", stopped, StepDown{}, "stopped", ""},
		{"stopped ignores a second shutdown", stopped, Shutdown{}, "stopped", ""},
		// Handoff: a restart leaves a replica's MariaDB running.
		{"replica shuts down for a handoff", replica(noLease), Shutdown{Handoff: true}, "stopped", "count_waiting(2)"},
		{"handoff, none waiting", handoff, Waiting{Purpose: ForShutdown, Known: true}, "stopped", "handoff"},
		{"handoff, commits waiting", handoff, Waiting{Purpose: ForShutdown, N: 1, Known: true}, "stopped", "kill"},
		{"handoff, count unknown", handoff, Waiting{Purpose: ForShutdown}, "stopped", "kill"},
		{"master asked to hand off: fences and stops instead", master(7), Shutdown{Handoff: true}, "stopped",
			"read_only await_drained fence stop_capture check_quiet(2)"},
		{"replica, not supervising, handoff", State{Phase: Replica}, Shutdown{Handoff: true}, "stopped", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, as := Step(tc.from, tc.ev)
			if got.String() != tc.to || acts(as) != tc.actions {
				t.Fatalf("%s + %T%+v\n got  %s [%s]\n want %s [%s]", tc.from, tc.ev, tc.ev, got, acts(as), tc.to, tc.actions)
			}
		})
	}
}

// Every phase meets every kind of event without a panic, and the
// invariants hold on each single step: writes open only after
// MakeDurable and on a ready lease; a master losing its lease sets
// read_only first; a graceful stop needs a zero count.
func TestStepInvariantsEveryPair(t *testing.T) {
	obs := []Obs{ready, noLease, with(ready, func(o *Obs) { o.CaughtUp = false }), with(ready, func(o *Obs) { o.Unsafe = true }),
		with(ready, func(o *Obs) { o.LeaseEpoch = 8 }), with(ready, func(o *Obs) { o.MySQLUp = false })}
	var states []State
	for _, o := range obs {
		states = append(states, replica(o), armed(o), State{Phase: Stopped, Obs: o, Supervise: true}, State{Phase: Stopped, Obs: o, Supervise: true, Handoff: true},
			State{Phase: Stopped, Obs: o, Supervise: true, Armed: true}, State{Phase: Stopped, Obs: o, Supervise: true, Armed: true, Handoff: true})
	}
	states = append(states, master(7), master(8))
	var events []Event
	for _, o := range obs {
		events = append(events, Observed{o}, Repoint{o}, SwitchoverAborted{o})
	}
	for _, e := range []uint64{7, 8} {
		events = append(events, PromoteFailed{Epoch: e}, CaptureStopped{Epoch: e, Unsafe: e == 8})
	}
	for _, p := range []Purpose{ForDemote, ForShutdown} {
		events = append(events, Waiting{Purpose: p}, Waiting{Purpose: p, Known: true}, Waiting{Purpose: p, N: 3, Known: true})
	}
	for _, p := range []Purpose{ForDemote, ForShutdown} {
		events = append(events, Quiet{Purpose: p}, Quiet{Purpose: p, Proven: true})
	}
	events = append(events, StepDown{"x"}, Shutdown{}, Shutdown{Handoff: true}, Released{}, Released{OK: true})
	for _, s := range states {
		for _, ev := range events {
			name := fmt.Sprintf("%s+%T%+v", s, ev, ev)
			next, as := Step(s, ev)
			durable := false
			for _, a := range as {
				switch a.Kind {
				case MakeDurable:
					durable = true
				case OpenWrites:
					o := next.Obs
					_, resumed := ev.(SwitchoverAborted)
					if resumed && (s.Phase != Master || s.Epoch != a.Epoch) {
						t.Errorf("%s: a switchover's resume opened writes on what was not the master of that epoch", name)
					}
					if !durable || !o.LeaseMaster || o.LeaseEpoch != a.Epoch || (!o.CaughtUp && !resumed) || !o.MySQLUp || o.Unsafe || o.Stopping || next.Phase != Master {
						t.Errorf("%s: open_writes without durability or a ready lease: %s", name, acts(as))
					}
				case GracefulStop, Handoff:
					w, counted := ev.(Waiting)
					q, proven := ev.(Quiet)
					if !(counted && w.Known && w.N == 0 && !s.Armed) && !(proven && q.Proven) && ev != (Released{OK: true}) {
						t.Errorf("%s: %s without a zero count (unarmed) or a proof of quiet", name, a.Kind)
					}
					if a.Kind == Handoff && s.Armed && ev != (Released{OK: true}) {
						t.Errorf("%s: handoff of an armed server not released", name)
					}
					if a.Kind == Handoff && !s.Handoff {
						t.Errorf("%s: handoff not asked for", name)
					}
				}
			}
			if s.Phase == Master && next.Phase != Master && len(as) > 0 && as[0].Kind != SetReadOnly &&
				(len(as) < 2 || as[0].Kind != MarkUnsafe || as[1].Kind != SetReadOnly) {
				t.Errorf("%s: a master stops serving without read_only first: %s", name, acts(as))
			}
			// Semi-sync may go off (KeepReplica) on an armed server only
			// right after a release proved it quiet.
			for _, a := range as {
				if a.Kind == KeepReplica && s.Armed && ev != (Released{OK: true}) {
					t.Errorf("%s: keep_replica on an armed server without a release", name)
				}
				if a.Kind == Release && !s.Armed {
					t.Errorf("%s: release of a server never armed", name)
				}
			}
			if q, ok := ev.(Quiet); ok && !q.Proven && s.Phase != Master && acts(as) != "kill" {
				t.Errorf("%s: not proven quiet but %q", name, acts(as))
			}
			if r, ok := ev.(Released); ok && !r.OK && s.Phase != Master && acts(as) != "kill" {
				t.Errorf("%s: not released but %q", name, acts(as))
			}
			if next.Phase == Master && s.Phase != Master && !next.Armed {
				t.Errorf("%s: promoted without arming", name)
			}
			if s.Phase == Master && next.Handoff {
				t.Errorf("%s: a master's stop granted a handoff", name)
			}
			if s.Phase == Master && next.Phase != Master && len(as) == 0 {
				t.Errorf("%s: a master stops serving without any action", name)
			}
		}
	}
}
