package replserver

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"runtime/debug"
	"strings"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/server"

	"phxgo/binlogd/rawnet"
	"phxgo/internal/ratelog"
)

const erUnknownCom = 1047

// handle runs one client connection: handshake, command phase, and, on
// COM_BINLOG_DUMP, the dump stream. It owns nc; the caller closes it.
func (s *Server) handle(nc net.Conn) {
	accepted := nc
	log := s.log.With("remote", nc.RemoteAddr().String())
	defer func() {
		// go-mysql's handshake code is not ours to fuzz: a panic on a
		// hostile packet ends this connection, never the process.
		if r := recover(); r != nil {
			log.Error("connection handler panicked; connection closed", "panic", r, "stack", string(debug.Stack()))
		}
	}()
	if s.refuseBlocked(nc, log) {
		return
	}
	nc = rawnet.Wrap(nc) // no sysmon wake-up per dump write (package rawnet)
	_ = nc.SetDeadline(time.Now().Add(handshakeTimeout))
	guard := newPreAuthGuard(nc, s.cfg.TLS)
	conn, err := s.mysql.NewCustomizedConn(guard, s.accounts, server.EmptyHandler{})
	if err != nil {
		if ok, held := s.handshakeLog.Allow(time.Now()); ok {
			log.Info("handshake failed", "err", ratelog.Cut(withoutStacks(err.Error()), 300), "unlogged_before", held)
		}
		return
	}
	guard.loggedIn()
	if s.accounts.of(conn.GetUser()) == accountOutside {
		if s.outside.Add(1) > s.maxOutside() {
			s.outside.Add(-1)
			s.outsideWarn(nil, log, "refusing an outside replica: its account holds every connection it may", "max_outside", s.maxOutside())
			// The answer to the client's first command, read within
			// the handshake's deadline and the command size limit.
			conn.ResetSequence()
			if _, err := conn.ReadPacket(); err != nil {
				return
			}
			_ = conn.WriteValue(mysql.NewError(mysql.ER_CON_COUNT_ERROR, fmt.Sprintf(
				"Too many connections: outside replicas hold at most %d of binlogd's replication endpoint's %d", s.maxOutside(), s.acc.Max)))
			return
		}
		defer s.outside.Add(-1)
	}
	s.acc.Admit(accepted)
	// From here on the connection is the TLS session when the client
	// asked for one, else the socket (the dump writes to it directly).
	nc = guard.stream()
	_ = nc.SetDeadline(time.Time{})
	s.count(func(st *Stats) { st.Connections++ })
	_, overTLS := nc.(*tls.Conn)
	sess := newSession(s.sysvars, time.Now)
	sess.account = s.accounts.of(conn.GetUser())
	log = log.With("user", conn.GetUser(), "account", sess.account.String(), "tls", overTLS)
	if sess.account == accountOutside {
		s.count(func(st *Stats) { st.Outside++ })
		s.outsideInfo(sess, log, "outside replica connected")
	}
	for {
		_ = nc.SetReadDeadline(time.Now().Add(commandTimeout))
		conn.ResetSequence()
		p, err := conn.ReadPacket()
		if err != nil {
			if n := guard.commandTooBig(); n > 0 {
				s.outsideWarn(sess, log, "command packet over the limit; closing", "announced_bytes", n, "limit_bytes", maxCommandPacket)
				conn.Sequence = 1 // the answer to the client's packet 0, which go-mysql never saw
				_ = conn.WriteValue(mysql.NewError(mysql.ER_NET_PACKET_TOO_LARGE, errCommandTooBig{n}.Error()))
				return
			}
			if !errors.Is(err, io.EOF) {
				log.Debug("read command", "err", err)
			}
			return
		}
		cmd, err := decodeCommand(p)
		if err != nil {
			s.outsideWarn(sess, log, "bad command packet; closing", "err", err)
			_ = conn.WriteValue(mysql.NewError(mysql.ER_MALFORMED_PACKET, err.Error()))
			return
		}
		_ = nc.SetReadDeadline(time.Time{})
		if err := s.command(conn, nc, sess, cmd, log); err != nil {
			if !errors.Is(err, errEndConn) {
				log.Info("connection ended", "err", err)
			}
			return
		}
	}
}

// outsideInfo and outsideWarn log a command-phase line. An outside
// replica's lines (sess nil: the caller knows it is one) go through
// Server.outsideLog: that account is a credential handed out of the
// cluster, and one of its connections looping over a refused query
// wrote 19 MB of log a second (red-team test, session 37). The node's
// own account logs every line. Each message has a limiter of its own
// (msg is always a constant: a handful of kinds).
func (s *Server) outsideInfo(sess *session, log *slog.Logger, msg string, args ...any) {
	s.outsideLine(sess, log, slog.LevelInfo, msg, args)
}

func (s *Server) outsideWarn(sess *session, log *slog.Logger, msg string, args ...any) {
	s.outsideLine(sess, log, slog.LevelWarn, msg, args)
}

func (s *Server) outsideLine(sess *session, log *slog.Logger, level slog.Level, msg string, args []any) {
	if sess == nil || sess.account == accountOutside {
		l, _ := s.outsideLog.LoadOrStore(msg, &ratelog.Limiter{Every: handshakeLogEvery})
		ok, held := l.(*ratelog.Limiter).Allow(time.Now())
		if !ok {
			return
		}
		args = append(args, "unlogged_before", held)
	}
	log.Log(context.Background(), level, msg, args...)
}

// errEndConn ends a connection without it being a failure (COM_QUIT, the
// end of a dump).
var errEndConn = errors.New("end of connection")

func (s *Server) command(conn *server.Conn, nc net.Conn, sess *session, cmd command, log *slog.Logger) error {
	switch cmd.code {
	case comQuit:
		return errEndConn
	case comPing:
		return conn.WriteValue(nil)
	case comInitDB:
		if sess.account == accountOutside {
			return s.deny(conn, "COM_INIT_DB", log)
		}
		return conn.WriteValue(nil)
	case comQuery:
		if sess.account == accountOutside && !outsideMayQuery(cmd.query) {
			return s.deny(conn, "query '"+trunc(cmd.query)+"'", log)
		}
		r, understood := sess.answer(cmd.query)
		if !understood {
			s.outsideInfo(sess, log, "query not recognized", "query", trunc(cmd.query), "error", r.err)
		} else {
			log.Debug("query", "query", trunc(cmd.query))
		}
		return writeReply(conn, r)
	case comRegisterSlave:
		s.outsideInfo(sess, log, "replica registered", "replica_server_id", cmd.register.serverID,
			"report_host", cmd.register.host, "report_port", cmd.register.port)
		return conn.WriteValue(nil)
	case comBinlogDump:
		if why := outsideServerIDRefusal(cmd.dump.serverID); sess.account == accountOutside && why != "" {
			s.count(func(st *Stats) { st.Refused++ })
			s.outsideWarn(sess, log, "refusing outside replica (error 1236)", "replica_server_id", cmd.dump.serverID, "reason", why)
			_ = conn.WriteValue(mysql.NewError(erMasterFatalReading, why))
			return errEndConn
		}
		s.dump(nc, conn.Sequence, sess, cmd.dump, log)
		return errEndConn
	default:
		s.outsideInfo(sess, log, "unsupported command", "code", cmd.code)
		return conn.WriteValue(mysql.NewError(erUnknownCom, fmt.Sprintf("binlogd replication endpoint: unsupported command 0x%02x", cmd.code)))
	}
}

// deny answers what the outside account may not do; the connection
// stays open (a replica's tool may go on to dump).
func (s *Server) deny(conn *server.Conn, what string, log *slog.Logger) error {
	s.count(func(st *Stats) { st.Denied++ })
	s.outsideWarn(nil, log, "outside account refused", "what", what)
	return conn.WriteValue(outsideRefused(conn.GetUser(), what))
}

func writeReply(conn *server.Conn, r reply) error {
	switch {
	case r.err != nil:
		return conn.WriteValue(r.err)
	case r.names == nil:
		return conn.WriteValue(nil)
	}
	rs, err := mysql.BuildSimpleTextResultset(r.names, r.rows)
	if err != nil {
		return conn.WriteValue(mysql.NewError(mysql.ER_UNKNOWN_ERROR, err.Error()))
	}
	return conn.WriteValue(&mysql.Result{Resultset: rs})
}

// withoutStacks is go-mysql's error text without the stack traces it
// carries (a function line, then a tab-indented file line, per frame):
// 2 KB a line otherwise, for each stranger's failed handshake.
func withoutStacks(msg string) string {
	lines := strings.Split(msg, "\n")
	var keep []string
	for i, l := range lines {
		if strings.HasPrefix(l, "\t") || (i+1 < len(lines) && strings.HasPrefix(lines[i+1], "\t")) {
			continue
		}
		keep = append(keep, l)
	}
	return strings.Join(keep, ": ")
}
