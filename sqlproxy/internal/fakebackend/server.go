package fakebackend

import (
	"bytes"
	"crypto/sha1"
	"encoding/binary"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"phxgo/sqlproxy/wire"
)

// caps is what the fake offers, as MariaDB 10.11 does (no SSL, no
// compression, no session tracking).
const caps = wire.ClientLongPassword | wire.ClientFoundRows | wire.ClientLongFlag | wire.ClientConnectWithDB |
	wire.ClientNoSchema | wire.ClientODBC | wire.ClientLocalFiles | wire.ClientIgnoreSpace | wire.ClientProtocol41 |
	wire.ClientInteractive | wire.ClientIgnoreSigpipe | wire.ClientTransactions | wire.ClientSecureConn |
	wire.ClientMultiStatements | wire.ClientMultiResults | wire.ClientPSMultiResults | wire.ClientPluginAuth |
	wire.ClientConnectAttrs | wire.ClientPluginAuthLenenc | wire.ClientDeprecateEOF

// Query is a statement as a Hook sees it.
type Query struct {
	ConnID uint32
	User   string
	SQL    string
	InTx   bool // the connection is inside a transaction
}

// Reply is a scripted answer (Server.Hook). The zero Reply is an OK.
type Reply struct {
	Err  *wire.Error
	Cols []string   // a result set with these columns…
	Rows [][]string // …and rows
	// Drop closes the connection instead of answering (after the rows
	// given by DropAfterRows when Cols is set: then the client has seen
	// part of the answer). CutFrame also leaves half a frame behind.
	Drop          bool
	DropAfterRows int
	CutFrame      bool
	// Wait holds the answer until it is closed (or the connection is
	// killed).
	Wait <-chan struct{}
	// Run: after Wait, run the statement normally instead of this reply.
	Run bool
}

// Server is one fake MariaDB on a loopback port.
type Server struct {
	// Users maps a user to its password; empty: any user, any password.
	Users map[string]string
	// LockWait is how long a row lock is waited for (innodb_lock_wait_timeout).
	LockWait time.Duration
	// Hook, if set, sees every COM_QUERY first; a nil reply runs it.
	Hook func(Query) *Reply

	id  uint32
	ln  net.Listener
	acc wire.Acceptor

	mu      sync.Mutex
	dbs     map[string]map[string]*table
	globals map[string]string
	conns   map[uint32]*conn
	locks   map[string]uint32 // row -> connection holding its lock
	unlock  chan struct{}     // closed and replaced when a lock is released
	nextID  uint32
	queries atomic.Uint64
	logins  atomic.Uint64
}

// Start serves a fake MariaDB with the given server id on 127.0.0.1;
// Close stops it. It starts writable (read_only=0) with no databases.
func Start(serverID uint32) (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &Server{id: serverID, ln: ln, LockWait: 50 * time.Second,
		dbs: map[string]map[string]*table{}, conns: map[uint32]*conn{}, locks: map[string]uint32{},
		unlock: make(chan struct{}),
		globals: map[string]string{
			"server_id": fmt.Sprint(serverID), "read_only": "0", "version": "10.11.99-MariaDB-fake",
			"max_allowed_packet": "16777216", "gtid_binlog_pos": "", "gtid_current_pos": "",
			"last_gtid": "", "innodb_lock_wait_timeout": "50", "transaction_isolation": "REPEATABLE-READ",
			"sql_mode": "STRICT_TRANS_TABLES", "hostname": "fake",
		}}
	go func() { _ = s.acc.Serve(ln, s.handle) }()
	return s, nil
}

// Addr is the host:port clients dial.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// ServerID is @@server_id.
func (s *Server) ServerID() uint32 { return s.id }

// Close stops accepting, closes every connection and waits for them.
func (s *Server) Close() error {
	err := s.acc.Close()
	s.acc.Wait()
	return err
}

// SetGlobal sets a global variable (read_only, gtid_binlog_pos, …).
func (s *Server) SetGlobal(name, value string) {
	s.mu.Lock()
	s.globals[name] = value
	s.mu.Unlock()
}

// SetReadOnly turns read_only on or off.
func (s *Server) SetReadOnly(on bool) {
	v := "0"
	if on {
		v = "1"
	}
	s.SetGlobal("read_only", v)
}

func (s *Server) global(name string) (*string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.globals[name]
	return &v, ok
}

func (s *Server) readOnly() bool {
	v, _ := s.global("read_only")
	return *v == "1"
}

func (s *Server) hasDB(db string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.dbs[db]
	return ok
}

// Exec runs sql as a root session of its own (setup and checks from a
// test, not through the proxy) and returns the rows of a SELECT.
func (s *Server) Exec(sql string) ([][]*string, error) {
	c := s.newConn(nil, "root")
	defer s.dropConn(c)
	r := c.exec(sql)
	if r.err != nil {
		return nil, r.err
	}
	return r.rows, nil
}

// Count returns SELECT COUNT(*) FROM table [WHERE …] as a root session
// sees it; -1 on error.
func (s *Server) Count(sql string) int {
	rows, err := s.Exec(sql)
	if err != nil || len(rows) != 1 || rows[0][0] == nil {
		return -1
	}
	var n int
	fmt.Sscan(*rows[0][0], &n)
	return n
}

// Conns lists the ids of the open client connections (a processlist).
func (s *Server) Conns() []uint32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []uint32
	for _, c := range s.conns {
		if c.nc != nil {
			out = append(out, c.id)
		}
	}
	return out
}

// Kill closes connection id (its transaction rolls back). It reports
// whether there was one; Kill returns once it is gone.
func (s *Server) Kill(id uint32) bool {
	s.mu.Lock()
	c := s.conns[id]
	s.mu.Unlock()
	if c == nil || c.nc == nil {
		return false
	}
	c.kill()
	<-c.gone
	return true
}

// Queries counts the COM_QUERY commands served; Logins the logins.
func (s *Server) Queries() uint64 { return s.queries.Load() }
func (s *Server) Logins() uint64  { return s.logins.Load() }

// conn is one client connection's state.
type conn struct {
	srv    *Server
	id     uint32
	nc     net.Conn // nil for Exec's root sessions
	wc     *wire.Conn
	caps   uint32
	user   string
	db     string
	vars   map[string]string
	killed chan struct{}
	gone   chan struct{}
	once   sync.Once

	inTx, txReadOnly, autocommitOff, locked bool
	nextTx                                  string // a pending SET TRANSACTION
	undos                                   []undo
}

func (s *Server) newConn(nc net.Conn, user string) *conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextID++
	c := &conn{srv: s, id: s.nextID, nc: nc, user: user, vars: map[string]string{},
		killed: make(chan struct{}), gone: make(chan struct{})}
	s.conns[c.id] = c
	return c
}

// dropConn ends c: whatever transaction it had rolls back.
func (s *Server) dropConn(c *conn) {
	c.rollback()
	s.mu.Lock()
	delete(s.conns, c.id)
	s.mu.Unlock()
	close(c.gone)
}

func (c *conn) kill() {
	c.once.Do(func() {
		close(c.killed)
		if c.nc != nil {
			c.nc.Close()
		}
	})
}

func (c *conn) status() uint16 {
	var st uint16
	if c.inTx {
		st |= wire.StatusInTrans
		if c.txReadOnly {
			st |= wire.StatusInTransReadonly
		}
	}
	if !c.autocommitOff {
		st |= wire.StatusAutocommit
	}
	return st
}

// lock takes the row lock key for c, waiting up to c's lock wait.
func (s *Server) lock(c *conn, key string) *wire.Error {
	deadline := time.NewTimer(c.lockWait())
	defer deadline.Stop()
	for {
		s.mu.Lock()
		owner, held := s.locks[key]
		if !held || owner == c.id {
			s.locks[key] = c.id
			s.mu.Unlock()
			return nil
		}
		ch := s.unlock
		s.mu.Unlock()
		select {
		case <-ch:
		case <-deadline.C:
			return &wire.Error{Code: 1205, SQLState: "HY000", Message: "Lock wait timeout exceeded; try restarting transaction"}
		case <-c.killed:
			return &wire.Error{Code: 1927, SQLState: "70100", Message: "Connection was killed"}
		}
	}
}

func (s *Server) unlockAll(id uint32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for k, owner := range s.locks {
		if owner == id {
			delete(s.locks, k)
			n++
		}
	}
	if n > 0 {
		close(s.unlock)
		s.unlock = make(chan struct{})
	}
}

func (s *Server) handle(nc net.Conn) {
	c := s.newConn(nc, "")
	defer s.dropConn(c)
	defer c.kill()
	c.wc = wire.NewConn(nc)
	if err := c.login(); err != nil {
		return
	}
	s.logins.Add(1)
	for {
		c.wc.Seq = 0
		pkt, err := c.wc.ReadPacket()
		if err != nil || len(pkt) == 0 {
			return
		}
		if !c.command(pkt) {
			return
		}
	}
}

// login runs the handshake: greeting, HandshakeResponse41, OK or ERR.
func (c *conn) login() error {
	salt := wire.NewSalt()
	g := &wire.Greeting{Version: "10.11.99-MariaDB-fake", ConnID: c.id, Salt: salt, Caps: caps,
		Charset: 45, Status: wire.StatusAutocommit, Plugin: wire.NativePlugin}
	if err := c.wc.WriteFlush(g.Encode()); err != nil {
		return err
	}
	if err := c.skipProxyHeader(); err != nil {
		return err
	}
	p, err := c.wc.ReadPacket()
	if err != nil {
		return err
	}
	r, err := wire.ParseResponse(p)
	if err != nil {
		return err
	}
	c.caps, c.user = r.Caps&caps, r.User
	if pw, ok := c.srv.Users[r.User]; len(c.srv.Users) > 0 && (!ok || !tokenOK(salt, r.Auth, pw)) {
		e := &wire.Error{Code: 1045, SQLState: "28000", Message: fmt.Sprintf("Access denied for user '%s'@'127.0.0.1' (using password: YES)", r.User)}
		_ = c.wc.WriteFlush(e.Packet())
		return e
	}
	if r.DB != "" {
		if !c.srv.hasDB(r.DB) {
			e := &wire.Error{Code: 1049, SQLState: "42000", Message: fmt.Sprintf("Unknown database '%s'", r.DB)}
			_ = c.wc.WriteFlush(e.Packet())
			return e
		}
		c.db = r.DB
	}
	return c.wc.WriteFlush(wire.OK(0, 0, c.status()))
}

// skipProxyHeader drops a PROXY protocol v2 header in front of the first
// packet, as MariaDB takes one from its proxy_protocol_networks
// (sqlproxy sends one on every TCP backend login).
func (c *conn) skipProxyHeader() error {
	sig, err := c.wc.R.Peek(16)
	if err != nil || !bytes.Equal(sig[:12], []byte("\r\n\r\n\x00\r\nQUIT\n")) {
		return nil // not one (a handshake response is longer than 16 bytes)
	}
	_, err = c.wc.R.Discard(16 + int(binary.BigEndian.Uint16(sig[14:16])))
	return err
}

func tokenOK(salt, token []byte, password string) bool {
	if password == "" {
		return len(token) == 0
	}
	s1 := sha1.Sum([]byte(password))
	s2 := sha1.Sum(s1[:])
	_, ok := wire.Stage1FromToken(salt, token, s2[:])
	return ok
}

// command answers one command; false closes the connection.
func (c *conn) command(pkt []byte) bool {
	switch pkt[0] {
	case wire.ComQuit:
		return false
	case wire.ComPing:
		return c.wc.WriteFlush(wire.OK(0, 0, c.status())) == nil
	case wire.ComInitDB:
		if !c.srv.hasDB(string(pkt[1:])) {
			return c.send(errf(1049, "42000", "Unknown database '%s'", pkt[1:]))
		}
		c.db = string(pkt[1:])
		return c.send(result{})
	case wire.ComResetConnection:
		c.rollback()
		c.autocommitOff, c.locked, c.nextTx = false, false, ""
		clear(c.vars)
		return c.send(result{})
	case wire.ComQuery:
		c.srv.queries.Add(1)
		return c.query(string(pkt[1:]))
	}
	return c.send(errf(1047, "08S01", "fakebackend: command 0x%02x not supported", pkt[0]))
}

func (c *conn) query(sql string) bool {
	if h := c.srv.Hook; h != nil {
		if r := h(Query{ConnID: c.id, User: c.user, SQL: sql, InTx: c.inTx}); r != nil {
			if r.Wait != nil {
				select {
				case <-r.Wait:
				case <-c.killed:
					return false
				}
			}
			if !r.Run {
				return c.scripted(r)
			}
		}
	}
	return c.send(c.exec(sql))
}

// scripted sends a Hook's reply. A drop rolls the transaction back
// before the socket closes, so whoever sees the close sees the rollback.
func (c *conn) scripted(r *Reply) bool {
	if r.Drop {
		c.rollback()
	}
	if r.Drop && len(r.Cols) == 0 {
		if r.CutFrame {
			_, _ = c.nc.Write([]byte{10, 0, 0, 1, 0xfe}) // a 10-byte frame with 1 byte
		}
		return false
	}
	res := result{err: r.Err, cols: r.Cols}
	for _, row := range r.Rows {
		out := make([]*string, len(row))
		for i := range row {
			out[i] = &row[i]
		}
		res.rows = append(res.rows, out)
	}
	if r.Drop {
		res.rows = res.rows[:min(r.DropAfterRows, len(res.rows))]
		c.writeResultSet(res, false)
		if r.CutFrame {
			_ = c.wc.W.Flush()
			_, _ = c.nc.Write([]byte{10, 0, 0, c.wc.Seq, 1})
		}
		_ = c.wc.W.Flush()
		return false
	}
	return c.send(res)
}

// send writes r: ERR, OK, or a text result set.
func (c *conn) send(r result) bool {
	switch {
	case r.err != nil:
		_ = c.wc.WritePacket(r.err.Packet())
	case r.cols == nil:
		_ = c.wc.WritePacket(wire.OK(r.affected, 0, c.status()))
	default:
		c.writeResultSet(r, true)
	}
	return c.wc.W.Flush() == nil
}

// writeResultSet buffers a text result set; end: with its terminator.
func (c *conn) writeResultSet(r result, end bool) {
	deprecateEOF := c.caps&wire.ClientDeprecateEOF != 0
	_ = c.wc.WritePacket(wire.AppendLenEnc(nil, uint64(len(r.cols))))
	for _, name := range r.cols {
		_ = c.wc.WritePacket(columnDef(name))
	}
	if !deprecateEOF {
		_ = c.wc.WritePacket(wire.EOF(0, c.status()))
	}
	for _, row := range r.rows {
		var b []byte
		for _, v := range row {
			if v == nil {
				b = append(b, 0xfb)
			} else {
				b = wire.AppendLenEncString(b, []byte(*v))
			}
		}
		_ = c.wc.WritePacket(b)
	}
	if !end {
		return
	}
	if deprecateEOF {
		ok := wire.OK(0, 0, c.status())
		ok[0] = wire.HeaderEOF
		_ = c.wc.WritePacket(ok)
	} else {
		_ = c.wc.WritePacket(wire.EOF(0, c.status()))
	}
}

// columnDef is a ColumnDefinition41 of a VARCHAR column.
func columnDef(name string) []byte {
	b := wire.AppendLenEncString(nil, []byte("def"))
	for _, s := range []string{"", "", "", name, name} {
		b = wire.AppendLenEncString(b, []byte(s))
	}
	b = append(b, 0x0c, 33, 0) // fixed length; charset utf8_general_ci
	b = append(b, 0, 1, 0, 0)  // column length 256
	b = append(b, 0xfd, 0, 0)  // MYSQL_TYPE_VAR_STRING, flags
	return append(b, 0, 0, 0)  // decimals, filler
}
