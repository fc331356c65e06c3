package topology

import (
	"context"
	"time"

	pb "phxgo/proto"
)

// Window is a read window: the master (MasterID, in term Epoch) lent this
// proxy the right to send statements straight to its MariaDB (MySQLAddr)
// until Until, on this process's monotonic clock.
//
// Until = t0 + remaining - drift, where t0 is read before the request
// is sent, remaining is what the master granted (never more than its own
// lease left, measured after it received the request) and drift is the
// lease's DriftMargin. sqlproxy/doc.go ("One hop") has the argument that
// the window ends before any other master can serve.
type Window struct {
	MasterID  uint32
	Epoch     uint64
	MySQLAddr string
	Until     time.Time
	// RenewAt: ask again from here on (half of the window used).
	RenewAt time.Time
}

// WindowValid reports whether a non-master proxy may send a statement
// straight to Window.MySQLAddr at now.
func (v View) WindowValid(now time.Time) bool {
	return !v.IsMaster && v.Window.MySQLAddr != "" && now.Before(v.Window.Until)
}

// WindowFromReply turns the master's answer to a request sent at t0 into
// a Window; ok is false when nothing usable is left after the margin.
func WindowFromReply(rep *pb.ReadWindowReply, t0 time.Time) (Window, bool) {
	usable := time.Duration(rep.RemainingNs - rep.DriftMarginNs)
	if rep.RemainingNs <= 0 || rep.DriftMarginNs <= 0 || usable <= 0 || rep.MysqlAddr == "" || rep.MasterId == 0 {
		// A reply without a positive margin is not from a lease this
		// proxy can reason about: refuse it rather than trust it.
		return Window{}, false
	}
	return Window{MasterID: rep.MasterId, Epoch: rep.Epoch, MySQLAddr: rep.MysqlAddr,
		Until: t0.Add(usable), RenewAt: t0.Add(usable / 2)}, true
}

// needWindow says whether the proxy should ask for a window now: on the
// master node, when it holds none of its own still short of its renewal
// point (its lease is that window); elsewhere, when a master is known and
// the proxy holds no window of that master short of its renewal point.
func needWindow(v View, self uint32, now time.Time) bool {
	w := v.Window
	if v.IsMaster {
		return w.MasterID != self || !now.Before(w.RenewAt)
	}
	if v.MasterID == 0 || v.MasterID == self || v.MasterMySQLAddr == "" {
		return false
	}
	return w.MySQLAddr == "" || w.MasterID != v.MasterID || !now.Before(w.RenewAt)
}

// windowIdle is how long windowLoop sleeps with nothing to renew or retry;
// a view change wakes it sooner.
const windowIdle = time.Second

// windowLoop keeps a read window, asking the local binlogd (which grants
// it as master or forwards to the master) ahead of expiry. A failed
// request leaves the window to run out: a non-master proxy then forwards
// to the master's proxy as before; the master's own proxy stops serving
// (masterWait) until a window comes.
func (a *Admin) windowLoop(ctx context.Context) {
	failing := false
	timer := time.NewTimer(windowIdle)
	defer timer.Stop()
	for {
		changed := a.Changed() // before the view: a change after it still wakes us
		v := a.View()
		asked := false
		if needWindow(v, a.Self(), time.Now()) {
			asked = true
			t0 := time.Now() // before the send: the master's remaining time is measured after it
			rctx, cancel := context.WithTimeout(ctx, a.interval+time.Second)
			rep, err := a.client.ReadWindow(rctx, &pb.ReadWindowRequest{})
			cancel()
			w, ok := Window{}, false
			if err == nil {
				w, ok = WindowFromReply(rep, t0)
			}
			if ok {
				if failing {
					a.log.Info("sqlproxy: read window granted again", "master", w.MasterID)
				}
				failing = false
				// Our own change must not wake us: wait for the renewal point.
				changed = a.setWindow(w)
				asked, v = false, a.View()
			} else if !failing {
				if v.IsMaster {
					a.log.Warn("sqlproxy: this node is master but grants its proxy no window; not serving", "err", err)
				} else {
					a.log.Warn("sqlproxy: no read window; forwarding to the master's proxy", "err", err)
				}
				failing = true
			}
		}
		next := windowIdle
		if d := time.Until(v.Window.RenewAt); v.Window.MySQLAddr != "" && d > 0 {
			next = min(next, d)
		}
		if asked || needWindow(v, a.Self(), time.Now()) {
			// Refused, or a window used up on arrival: retry at the
			// poll rate, do not spin.
			next = a.interval
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(next)
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		case <-changed:
		}
	}
}

// setWindow publishes the view with window w and returns the channel of
// the next change after it.
func (a *Admin) setWindow(w Window) <-chan struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.win = w
	a.publishLocked()
	return a.Changed()
}

// publishLocked publishes the last status's view with the window (a.mu
// held). On the master node the window it granted its own proxy is the
// lease: LeaseDeadline is its end, never anything from a status.
func (a *Admin) publishLocked() {
	v := a.base
	v.Window = a.win
	if v.IsMaster && a.win.MasterID == a.Self() {
		v.LeaseDeadline = a.win.Until
	}
	a.Set(v)
}
