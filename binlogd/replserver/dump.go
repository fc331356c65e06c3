package replserver

import (
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"time"

	"phxgo/binlogd/binlog"
)

// fetched is what the reader goroutine hands the dump loop: the
// transactions the cursor had ready (one Cursor.Next, or one
// BatchCursor.NextBatch), or the error that ends the dump.
type fetched struct {
	txns []binlog.Txn
	err  error
}

// prefetch is how many batches the reader may hold ahead of the writer;
// maxBatch bounds one batch. Small transactions share one flush.
const (
	prefetch = 4
	maxBatch = 256
)

// readAhead feeds txns from cur until ctx ends or the cursor fails (the
// error is sent, then it returns).
func readAhead(ctx context.Context, cur Cursor, txns chan<- fetched) {
	bc, batched := cur.(BatchCursor)
	for {
		var f fetched
		if batched {
			f.txns, f.err = bc.NextBatch(ctx, maxBatch)
		} else {
			var t binlog.Txn
			if t, f.err = cur.Next(ctx); f.err == nil {
				f.txns = []binlog.Txn{t}
			}
		}
		select {
		case txns <- f:
		case <-ctx.Done():
			return
		}
		if f.err != nil {
			return
		}
	}
}

// dump serves COM_BINLOG_DUMP until the replica leaves, the server closes,
// or the log cannot serve it (error 1236). seq is the next packet sequence
// number.
func (s *Server) dump(nc net.Conn, seq byte, sess *session, d binlogDump, log *slog.Logger) {
	log = log.With("replica_server_id", d.serverID)
	w := newPacketWriter(nc, seq, s.cfg.WriteTimeout)
	refuse := func(msg string) {
		s.count(func(st *Stats) { st.Refused++ })
		log.Warn("refusing replica (error 1236)", "reason", msg)
		if err := w.errPacket(erMasterFatalReading, msg); err != nil {
			log.Debug("write error packet", "err", err)
		}
	}
	state, ok := sess.vars["slave_connect_state"]
	if !ok {
		refuse("binlogd serves GTID replicas only: use CHANGE MASTER TO MASTER_USE_GTID=slave_pos")
		return
	}
	// A replica that sets @master_binlog_checksum is checksum-aware and gets
	// the log's events with their CRC32. As in MariaDB, its value decides
	// only whether the first fake ROTATE (sent before FORMAT_DESCRIPTION
	// announces CRC32) carries one: 'NONE' (mariadb-binlog, go-mysql) means
	// no. Everything after the FDE, heartbeats included, carries a CRC32.
	cs, ok := sess.userVar("master_binlog_checksum")
	if !ok {
		refuse("binlogd sends CRC32 checksummed events; the replica did not announce checksum support (SET @master_binlog_checksum)")
		return
	}
	pos, err := binlog.ParseGTIDList(state.val)
	if err != nil {
		refuse(fmt.Sprintf("binlogd: bad @slave_connect_state %q: %v", trunc(state.val), err))
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h, err := s.claimDump(d.serverID, nc, cancel)
	if err != nil {
		return
	}
	defer s.releaseDump(d.serverID, h)
	st := &stream{w: w, serverID: s.cfg.ServerID, fileNo: 1, pos: binlogStart,
		annotate: d.flags&binlogSendAnnotateRowsEvts != 0, rotateAt: s.rotateAt,
		artificialCRC: !strings.EqualFold(cs, "NONE")}
	st.last = pos
	if g, ok := pos.Domain(s.cfg.Domain); ok {
		st.last = binlog.GTIDList{g}
	}
	period := s.cfg.HeartbeatPeriod
	if v, ok := sess.userVar("master_heartbeat_period"); ok {
		var ns int64
		if _, err := fmt.Sscan(v, &ns); err == nil && ns > 0 && time.Duration(ns) < period {
			period = time.Duration(ns)
		}
	}
	idle := time.NewTimer(period)
	defer idle.Stop()
	cur, openErr, err := s.openBeating(ctx, pos, st, idle, period)
	if err != nil {
		log.Info("dump ended while the log was sought", "err", err)
		return
	}
	if openErr != nil {
		refuse(openErr.Error())
		return
	}
	defer cur.Close()
	s.count(func(st *Stats) { st.Dumps++ })
	log.Info("dump started", "gtid_pos", pos.String(), "annotate", d.flags&binlogSendAnnotateRowsEvts != 0, "sought_beating", st.begun)

	// The replica sends nothing during a dump: a read returning means it
	// closed the connection (STOP SLAVE, kill) or sent garbage.
	go func() {
		buf := make([]byte, 256)
		for {
			if _, err := nc.Read(buf); err != nil {
				cancel()
				return
			}
		}
	}()
	txns := make(chan fetched, prefetch)
	go readAhead(ctx, cur, txns)

	if !st.begun {
		if err := st.preamble(); err != nil {
			log.Info("dump ended", "err", err)
			return
		}
	}
	for {
		select {
		case f := <-txns:
			var sent, bytes int64
			for {
				for _, t := range f.txns {
					if err := st.txn(t); err != nil {
						log.Info("dump ended", "err", err)
						return
					}
					if t.Ends() {
						sent++
					}
					bytes += int64(len(t.Events))
				}
				if f.err != nil {
					if ctx.Err() == nil {
						refuse(fmt.Sprintf("binlogd: reading the log failed: %v", f.err))
					}
					return
				}
				select {
				case f = <-txns:
					continue
				default:
				}
				break
			}
			s.count(func(x *Stats) { x.Transactions += sent; x.Bytes += bytes })
			if err := w.flush(); err != nil {
				log.Info("dump ended", "err", err)
				return
			}
		case <-idle.C:
			if err := st.heartbeat(); err != nil {
				log.Info("dump ended", "err", err)
				return
			}
			s.count(func(x *Stats) { x.Heartbeats++ })
		case <-ctx.Done():
			log.Info("dump ended: replica disconnected or server closing")
			return
		}
		idle.Reset(period)
	}
}

// stream is the endpoint's virtual binlog for one dump: every event sent
// gets log_pos = its end offset in the current virtual file and a fresh
// CRC32. log_pos is 32 bits, so past rotateAt bytes the stream rotates to
// the next file name, as a real master does at max_binlog_size.
type stream struct {
	w        *packetWriter
	serverID uint32
	fileNo   int
	pos      uint32 // offset of the next event in the virtual file
	rotateAt uint32
	annotate bool // the replica asked for ANNOTATE_ROWS events
	// artificialCRC: the first fake ROTATE carries a CRC32 (the replica
	// declared CRC32, not NONE).
	artificialCRC bool
	last          binlog.GTIDList // position after the last transaction sent
	open          binlog.GTID     // a split transaction with pieces sent and its end to come
	begun         bool            // the preamble was sent (early, if the seek was slow)
	scratch       []byte
}

func (st *stream) file() string { return fmt.Sprintf("phxgo-bin.%06d", st.fileNo) }

// openBeating opens the cursor at pos. Seeking a position behind a
// multi-GiB transaction can outlast the replica's slave_net_timeout (10 s
// in Jepsen big/kill at load average 40: the replica gave up, reconnected,
// and every retry sought again, so it never caught up). So when Open has
// not returned by the first idle tick, the preamble goes out and then a
// heartbeat every period until it does. A quick Open (or refusal) sends
// nothing first, as before. openErr is Open's own error (to refuse with);
// err is a write error or the dump's end.
func (s *Server) openBeating(ctx context.Context, pos binlog.GTIDList, st *stream, idle *time.Timer, period time.Duration) (cur Cursor, openErr, err error) {
	type opened struct {
		cur Cursor
		err error
	}
	done := make(chan opened, 1)
	go func() {
		c, err := s.src.Open(ctx, pos)
		done <- opened{c, err}
	}()
	// abandon closes the cursor of an Open nobody waits for any more.
	abandon := func() {
		go func() {
			if o := <-done; o.err == nil {
				o.cur.Close()
			}
		}()
	}
	for {
		select {
		case o := <-done:
			return o.cur, o.err, nil
		case <-idle.C:
			if !st.begun {
				err = st.preamble()
			} else {
				err = st.heartbeat()
			}
			if err != nil {
				abandon()
				return nil, nil, err
			}
			s.count(func(x *Stats) { x.Heartbeats++ })
			idle.Reset(period)
		case <-ctx.Done():
			abandon()
			return nil, nil, ctx.Err()
		}
	}
}

// preamble sends what a MariaDB master sends before the first
// transaction of a file: (fake) ROTATE, FORMAT_DESCRIPTION, GTID_LIST.
func (st *stream) preamble() error {
	st.begun = true
	if err := st.send(st.artificial(fakeRotate(st.serverID, st.file(), binlogStart))); err != nil {
		return err
	}
	now := uint32(time.Now().Unix())
	if err := st.place(formatDescription(now, st.serverID, 0)); err != nil {
		return err
	}
	if err := st.place(gtidList(now, st.serverID, 0, st.last)); err != nil {
		return err
	}
	return st.w.flush()
}

// rotate ends the current virtual file with a real ROTATE event and starts
// the next one.
func (st *stream) rotate() error {
	st.fileNo++
	ev := fakeRotate(st.serverID, st.file(), binlogStart)
	binary.LittleEndian.PutUint16(ev[17:], 0) // a real rotate, not artificial
	if err := st.place(ev); err != nil {
		return err
	}
	st.pos = binlogStart
	now := uint32(time.Now().Unix())
	if err := st.place(formatDescription(now, st.serverID, 0)); err != nil {
		return err
	}
	return st.place(gtidList(now, st.serverID, 0, st.last))
}

// place gives an event built by this package its position, then sends it.
func (st *stream) place(ev []byte) error {
	st.pos += uint32(len(ev))
	var err error
	st.scratch, err = relocate(append(st.scratch[:0], 0x00), ev, st.pos)
	if err != nil {
		return err
	}
	return st.w.packet(st.scratch)
}

// send sends an artificial event as is (its log_pos already set).
func (st *stream) send(ev []byte) error {
	st.scratch = append(append(st.scratch[:0], 0x00), ev...) // OK byte, then the event
	return st.w.packet(st.scratch)
}

// txn sends one transaction's events, relocated into the virtual file, or
// one piece of a transaction (t.More, t.Offset): pieces arrive in order
// and whole, and are sent as they come, so a huge transaction is never
// held here whole. A file rotates only between transactions, so a split
// transaction stays in one virtual file (up to 4 GiB).
func (st *stream) txn(t binlog.Txn) error {
	if _, err := binlog.CountEvents(t.Events); err != nil { // all or none of it is sent
		return fmt.Errorf("%w: GTID %s: %v", ErrBadTxn, t.GTID, err)
	}
	if st.open.IsZero() != (t.Offset == 0) || !st.open.IsZero() && st.open != t.GTID {
		return fmt.Errorf("%w: piece of GTID %s at offset %d while %q is open", ErrBadTxn, t.GTID, t.Offset, st.open.String())
	}
	st.open = binlog.GTID{}
	if t.More {
		st.open = t.GTID
	}
	if t.Offset == 0 && uint64(st.pos)+uint64(len(t.Events)) > uint64(st.rotateAt) && st.pos > binlogStart+1024 {
		if err := st.rotate(); err != nil {
			return err
		}
	}
	for ev, rest := binlog.NextEvent(t.Events); ev != nil; ev, rest = binlog.NextEvent(rest) {
		if ev[4] == evAnnotateRows && !st.annotate {
			continue
		}
		next := uint64(st.pos) + uint64(len(ev))
		if next > 0xffffffff {
			return fmt.Errorf("%w: GTID %s does not fit a 4 GiB binlog file", ErrBadTxn, t.GTID)
		}
		if err := st.place(ev); err != nil {
			return fmt.Errorf("GTID %s: %w", t.GTID, err)
		}
	}
	if !t.More {
		st.last = binlog.GTIDList{t.GTID}
	}
	return nil
}

func (st *stream) heartbeat() error {
	if err := st.send(heartbeat(st.serverID, st.file(), st.pos)); err != nil {
		return err
	}
	return st.w.flush()
}

// artificial drops the CRC32 footer of the first fake ROTATE when the
// replica asked for none.
func (st *stream) artificial(ev []byte) []byte {
	if st.artificialCRC {
		return ev
	}
	ev = ev[:len(ev)-checksumLen]
	binary.LittleEndian.PutUint32(ev[eventSizeOffset:], uint32(len(ev)))
	return ev
}
