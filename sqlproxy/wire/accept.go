package wire

import (
	"errors"
	"net"
	"sync"

	"phxgo/internal/connevict"
)

// ErrClosed is returned by Acceptor.Serve once Stop or Close was called.
var ErrClosed = errors.New("wire: acceptor closed")

// Acceptor is the accept loop of a MySQL-protocol listener, shared by
// the proxy and binlogd's replication endpoint: a goroutine per
// connection, a cap on connections open at once, and a shutdown that
// ends every connection and waits for its goroutine. The zero value is
// ready; set Max and Refuse before the first Serve.
//
// At the cap, a new connection takes the place of the oldest one that
// has not logged in yet (Admit), if any; only when every connection has
// logged in is the new one refused. So idle strangers cannot hold the
// slots: 64 connections that sent nothing kept a node's own MariaDB
// from reconnecting to its binlogd for as long as they were renewed
// (audit, December 2026). To keep a slot a stranger must now outpace
// the logins, opening a whole cap of connections within one login. The
// connection that goes is the oldest of the address holding the most
// that have not logged in (evictee): a flood from one address evicts
// its own first, never another client's login while it holds more.
type Acceptor struct {
	// Max caps the connections open at once; 0 means no cap. A local
	// process holding sockets must not take the server to its file limit.
	// With MaxPending set, Max caps the logged-in ones only.
	Max int
	// MaxPending, when set, caps the connections not logged in yet on
	// their own: past it a newcomer takes the oldest one's slot, however
	// few have logged in. A flood must then outpace the logins by
	// MaxPending connections, not Max, within one login's time: with the
	// replication endpoint's 64, 4,000 silent connections a second
	// evicted every login slower than 16 ms, and a replica's TLS login
	// takes 30-60 ms (audit, December 2026).
	MaxPending int
	// Refuse takes each connection over Max, owns it and closes it. It
	// runs on the accept loop, so a slow answer belongs in a goroutine.
	// Nil closes the connection unanswered.
	Refuse func(net.Conn)

	mu      sync.Mutex
	lns     map[net.Listener]struct{}
	conns   map[net.Conn]*slot
	seq     uint64 // accepted connections, for the oldest pending
	stopped bool
	wg      sync.WaitGroup
}

// slot is an open connection's place under the cap.
type slot struct {
	seq      uint64
	host     string // the remote address's host: whose slot it is
	admitted bool   // logged in (Admit)
}

// Serve accepts on ln and runs handle(c) in a goroutine per connection;
// c is closed when handle returns (handle may close it earlier). Serve
// returns ErrClosed after Stop or Close, or the first accept error that
// is not a timeout. It does not close ln itself (Stop does); several
// Serves may run at once on different listeners.
func (a *Acceptor) Serve(ln net.Listener, handle func(net.Conn)) error {
	a.mu.Lock()
	if a.stopped {
		a.mu.Unlock()
		return ErrClosed
	}
	if a.lns == nil {
		a.lns, a.conns = map[net.Listener]struct{}{}, map[net.Conn]*slot{}
	}
	a.lns[ln] = struct{}{}
	a.mu.Unlock()
	for {
		c, err := ln.Accept()
		if err != nil {
			var ne net.Error
			timeout := errors.As(err, &ne) && ne.Timeout()
			a.mu.Lock()
			stopped := a.stopped
			if stopped || !timeout {
				delete(a.lns, ln)
			}
			a.mu.Unlock()
			switch {
			case stopped:
				return ErrClosed
			case timeout:
				continue
			}
			return err
		}
		a.mu.Lock()
		if a.stopped {
			a.mu.Unlock()
			c.Close()
			return ErrClosed
		}
		if evict, refuse := a.full(); evict || refuse {
			var old net.Conn
			if evict {
				old = a.evictee()
			}
			if old == nil {
				a.mu.Unlock()
				if a.Refuse != nil {
					a.Refuse(c)
				} else {
					c.Close()
				}
				continue
			}
			// It leaves the count now; its goroutine ends when its next
			// read fails on the closed socket (a stranger before login
			// holds only small buffers meanwhile).
			delete(a.conns, old)
			old.Close()
		}
		a.seq++
		a.conns[c] = &slot{seq: a.seq, host: connevict.Host(c.RemoteAddr())}
		a.wg.Add(1)
		a.mu.Unlock()
		go func() {
			defer a.wg.Done()
			handle(c)
			a.mu.Lock()
			delete(a.conns, c) // a no-op for an evicted one
			a.mu.Unlock()
			c.Close()
		}()
	}
}

// Admit marks c, a connection Serve passed to handle, as logged in: it
// keeps its slot at the cap.
func (a *Acceptor) Admit(c net.Conn) {
	a.mu.Lock()
	if sl := a.conns[c]; sl != nil {
		sl.admitted = true
	}
	a.mu.Unlock()
}

// full says what a newcomer costs: evict, the oldest connection not
// logged in gives up its slot; refuse, there is no slot for it. a.mu is
// held.
func (a *Acceptor) full() (evict, refuse bool) {
	if a.MaxPending <= 0 {
		return a.Max > 0 && len(a.conns) >= a.Max, false
	}
	admitted := 0
	for _, sl := range a.conns {
		if sl.admitted {
			admitted++
		}
	}
	if a.Max > 0 && admitted >= a.Max {
		return false, true
	}
	return len(a.conns)-admitted >= a.MaxPending, false
}

// evictee is the connection that gives up its slot to a newcomer: the
// oldest not admitted of the hosts that hold the most not admitted, or
// nil. So a flood from one address evicts its own connections first, and
// another client's login in progress only when that client holds as many
// and its login is the oldest (one host, e.g. everything on loopback:
// the oldest of all; connevict.Oldest says why not the smallest host).
// a.mu is held.
func (a *Acceptor) evictee() net.Conn {
	busiest := connevict.BusiestHosts(func(yield func(string) bool) {
		for _, sl := range a.conns {
			if !sl.admitted && !yield(sl.host) {
				return
			}
		}
	})
	var (
		oldest net.Conn
		seq    uint64
	)
	for c, sl := range a.conns {
		if !sl.admitted && busiest[sl.host] && (oldest == nil || sl.seq < seq) {
			oldest, seq = c, sl.seq
		}
	}
	return oldest
}

// Stop ends accepting: it closes every listener and every open
// connection without waiting for their goroutines. It returns the first
// listener close error other than net.ErrClosed.
func (a *Acceptor) Stop() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.stopped = true
	var first error
	for ln := range a.lns {
		if err := ln.Close(); err != nil && !errors.Is(err, net.ErrClosed) && first == nil {
			first = err
		}
	}
	for c := range a.conns {
		c.Close()
	}
	return first
}

// Wait waits for the goroutines of the connections Serve accepted.
func (a *Acceptor) Wait() { a.wg.Wait() }

// Close is Stop, then Wait.
func (a *Acceptor) Close() error {
	err := a.Stop()
	a.Wait()
	return err
}
