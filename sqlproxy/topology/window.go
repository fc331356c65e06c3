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

// needWindow says whether the proxy should ask for a window now: it is
// not the master, a master is known, and it holds no window of that
// master that is still short of its renewal point.
func needWindow(v View, self uint32, now time.Time) bool {
	if v.IsMaster || v.MasterID == 0 || v.MasterID == self || v.MasterMySQLAddr == "" {
		return false
	}
	w := v.Window
	return w.MySQLAddr == "" || w.MasterID != v.MasterID || !now.Before(w.RenewAt)
}

// windowLoop keeps a read window while this node is not the master,
// asking the local binlogd (which forwards to the master) ahead of expiry.
// A failed request leaves the window to run out: the proxy then forwards
// to the master's proxy as before.
func (a *Admin) windowLoop(ctx context.Context) {
	failing := false
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		case <-a.Changed():
		}
		v := a.View()
		now := time.Now()
		if needWindow(v, a.Self(), now) {
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
					a.log.Info("sqlproxy: read window granted again; one hop to the master's MariaDB", "master", w.MasterID)
				}
				failing = false
				a.setWindow(w)
			} else if !failing {
				a.log.Warn("sqlproxy: no read window; forwarding to the master's proxy", "err", err)
				failing = true
			}
		}
		next := a.interval
		if w := a.View().Window; w.MySQLAddr != "" {
			if d := time.Until(w.RenewAt); d > 0 && d < next {
				next = d
			} else if d <= 0 && failing {
				next = a.interval // retry at the poll rate while refused
			}
		}
		timer.Reset(next)
	}
}

// setWindow publishes the view with window w.
func (a *Admin) setWindow(w Window) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.win = w
	v := a.base
	v.Window = a.windowFor(v)
	a.Set(v)
}

// windowFor is the window to publish with base view v (a.mu held): none
// on the master itself.
func (a *Admin) windowFor(v View) Window {
	if v.IsMaster {
		return Window{}
	}
	return a.win
}
