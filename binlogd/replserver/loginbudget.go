package replserver

import (
	"encoding/binary"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"

	"phxgo/internal/addrrate"
)

// loginFailures is cfg's budget of failed logins per source address: a
// guesser of the node's or the outside replicas' password gets one guess
// per LoginFailureEvery once it has failed LoginFailureBurst times.
//
// The budget is the address's, whatever user it tries: the endpoint has
// two accounts, and a guess is checked before go-mysql reads the name.
// Loopback and the endpoint's own listen address are never blocked: the
// node's own MariaDB replicates from this endpoint from one of them, and
// a local process failing logins on purpose must not cut it off the log
// (red-team test, session 38: with a non-loopback repl_addr it came from
// that address). Guessing from the host itself is left to the host's own
// users and permissions.
func loginFailures(cfg Config) *addrrate.Failures {
	burst, every := cfg.LoginFailureBurst, cfg.LoginFailureEvery
	switch {
	case burst < 0:
		burst = 0 // no limit
	case burst == 0:
		burst = addrrate.DefaultFailureBurst
	}
	if every == 0 {
		every = addrrate.DefaultFailureEvery
	}
	f, err := addrrate.NewFailures(burst, every)
	if err != nil {
		panic(err) // Validate refused what NewFailures refuses
	}
	return f
}

// budgetAddr is the address whose budget a connection from a spends: its
// IP; the zero Addr (never blocked) for loopback, unless a test asks,
// and for what is not an IP peer.
func (s *Server) budgetAddr(a net.Addr) netip.Addr {
	ta, ok := a.(*net.TCPAddr)
	if !ok {
		return netip.Addr{}
	}
	ip, _ := netip.AddrFromSlice(ta.IP)
	ip = ip.Unmap()
	if (ip.IsLoopback() || ip == s.listenIP) && !s.budgetLoopback.Load() {
		return netip.Addr{}
	}
	return ip
}

// refuseBlocked answers a connection from an address past its budget of
// failed logins with MariaDB's 1129 in place of the greeting, as MariaDB
// answers a blocked host, and reports whether it did (the caller then
// closes it).
func (s *Server) refuseBlocked(nc net.Conn, log *slog.Logger) bool {
	blocked, wait := s.fails.Blocked(s.budgetAddr(nc.RemoteAddr()), "", time.Now())
	if !blocked {
		return false
	}
	if ok, held := s.handshakeLog.Allow(time.Now()); ok {
		log.Warn("refused a connection from an address past its budget of failed logins", "unlogged_before", held)
	}
	host, _, _ := net.SplitHostPort(nc.RemoteAddr().String())
	msg := fmt.Sprintf("Host '%s' is blocked because of many failed logins; retry in %s", host, wait.Round(time.Millisecond))
	_ = nc.SetWriteDeadline(time.Now().Add(time.Second))
	_, _ = nc.Write(errorPacket(mysql.ER_HOST_IS_BLOCKED, "HY000", msg))
	return true
}

// errorPacket is a whole ERR packet, sequence 0, as a server sends one in
// place of its greeting.
func errorPacket(code uint16, state, msg string) []byte {
	payload := []byte{0xff}
	payload = binary.LittleEndian.AppendUint16(payload, code)
	payload = append(payload, '#')
	payload = append(payload, state...)
	payload = append(payload, msg...)
	n := len(payload)
	return append([]byte{byte(n), byte(n >> 8), byte(n >> 16), 0}, payload...)
}
