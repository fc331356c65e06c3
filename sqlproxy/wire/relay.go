package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Result summarizes a relayed response.
type Result struct {
	// Status is the server status of the final OK/EOF (valid when HasStatus).
	Status    uint16
	HasStatus bool
	// Err is set when the response ended with an ERR packet.
	Err *Error
	// StmtID, Params and Columns describe a COM_STMT_PREPARE answer.
	StmtID          uint32
	Params, Columns uint16
	// Relayed counts the frames written to the client; when a relay fails
	// with Relayed > 0 the client saw part of a response and must be closed.
	Relayed int
}

// Relay errors. ErrClientSide means the client connection failed (it is
// gone); any other error came from the backend.
var (
	ErrClientSide = errors.New("wire: client connection failed")
	ErrProtocol   = errors.New("wire: unexpected packet from backend")
)

type relayer struct {
	be, cl *Conn
	caps   uint32
	res    Result
	// restore puts back the backend's TCP_USER_TIMEOUT after a LOAD DATA
	// LOCAL: it stays lifted until the load's answer (bearStall), as the
	// file's tail may wait in the socket while the server is stalled.
	restore func()
}

// RelayResponse copies the backend's complete response to command cmd
// from be to cl as raw frames (rows are never decoded) and flushes cl.
// caps are the capabilities negotiated on both connections (they must
// agree on CLIENT_DEPRECATE_EOF). For LOAD DATA LOCAL it also relays the
// client's file packets to the backend.
func RelayResponse(be, cl *Conn, cmd byte, caps uint32) (Result, error) {
	r := &relayer{be: be, cl: cl, caps: caps}
	err := r.response(cmd)
	if r.restore != nil {
		r.restore()
	}
	if ferr := cl.W.Flush(); ferr != nil && err == nil {
		err = fmt.Errorf("%w: %v", ErrClientSide, ferr)
	}
	return r.res, err
}

func (r *relayer) frame() (Frame, error) {
	f, err := r.be.RelayFrame(r.cl.W)
	if errors.Is(err, ErrCutFrame) {
		r.res.Relayed++ // the client holds part of it: close, do not answer
	}
	if err != nil {
		return f, err
	}
	r.res.Relayed++
	// A payload of MaxPayload continues in the next frames: relay them
	// whole, the head of the first one classifies the packet.
	for n := f.Len; n == MaxPayload; {
		g, err := r.be.RelayFrame(r.cl.W)
		if err != nil {
			return f, err
		}
		r.res.Relayed++
		n = g.Len
	}
	if len(f.Head) == 0 {
		f.Head = []byte{0x00} // empty payload: treat as a data frame
		if f.Len == 0 {
			f.Head = nil
		}
	}
	return f, nil
}

func (r *relayer) isEOF(f Frame) bool {
	if len(f.Head) == 0 || f.Head[0] != HeaderEOF {
		return false
	}
	if r.caps&ClientDeprecateEOF != 0 {
		return f.Len < MaxPayload
	}
	return f.Len < 9
}

func (r *relayer) end(f Frame) {
	if st, ok := StatusOf(f.Head); ok {
		r.res.Status, r.res.HasStatus = st, true
	}
}

func (r *relayer) response(cmd byte) error {
	switch cmd {
	case ComQuery, ComStmtExecute:
		return r.resultSets(cmd)
	case ComStmtPrepare:
		return r.prepareRewrite(0, false)
	case ComFieldList:
		return r.untilEOF(false)
	case ComStmtFetch:
		return r.untilEOF(true)
	case ComStmtClose, ComStmtSendLong:
		return nil
	}
	f, err := r.frame()
	if err != nil {
		return err
	}
	r.single(f)
	return nil
}

func (r *relayer) single(f Frame) {
	if len(f.Head) > 0 && f.Head[0] == HeaderErr {
		r.res.Err = ParseError(f.Head)
		return
	}
	r.end(f)
}

func (r *relayer) resultSets(cmd byte) error {
	for {
		f, err := r.frame()
		if err != nil {
			return err
		}
		if len(f.Head) == 0 {
			return ErrProtocol
		}
		switch f.Head[0] {
		case HeaderOK:
			r.end(f)
			if r.res.Status&StatusMoreResults != 0 {
				continue
			}
			return nil
		case HeaderErr:
			r.res.Err = ParseError(f.Head)
			return nil
		case HeaderLocal:
			if cmd != ComQuery {
				return ErrProtocol
			}
			if err := r.localInfile(); err != nil {
				return err
			}
			continue // the OK/ERR for the load follows
		}
		n, _, ok := ReadLenEnc(f.Head)
		if !ok {
			return ErrProtocol
		}
		for i := uint64(0); i < n; i++ {
			if _, err := r.frame(); err != nil {
				return err
			}
		}
		if r.caps&ClientDeprecateEOF == 0 {
			f, err := r.frame()
			if err != nil {
				return err
			}
			if !r.isEOF(f) {
				return ErrProtocol
			}
			r.end(f)
			if r.res.Status&StatusCursorExists != 0 {
				return nil
			}
		}
		more, err := r.rows()
		if err != nil || !more {
			return err
		}
	}
}

// rows relays rows up to the terminator; more reports another result.
func (r *relayer) rows() (more bool, err error) {
	for {
		f, err := r.frame()
		if err != nil {
			return false, err
		}
		if len(f.Head) > 0 && f.Head[0] == HeaderErr && f.Len < MaxPayload {
			r.res.Err = ParseError(f.Head)
			return false, nil
		}
		if r.isEOF(f) {
			r.end(f)
			return r.res.Status&StatusMoreResults != 0, nil
		}
	}
}

func (r *relayer) untilEOF(more bool) error {
	for {
		f, err := r.frame()
		if err != nil {
			return err
		}
		if len(f.Head) > 0 && f.Head[0] == HeaderErr {
			r.res.Err = ParseError(f.Head)
			return nil
		}
		if r.isEOF(f) {
			r.end(f)
			return nil
		}
	}
}

// localInfile relays the client's file content to the backend, frames
// as they come (sequence ids untouched: the server checks them), until
// the empty packet that ends the file. An empty frame right after one of
// MaxPayload bytes only completes that packet: the file goes on. A file
// is never held: a multi-GiB LOAD DATA LOCAL streams through. A server
// that stops reading for a while (a row waiting for a lock) stalls the
// relay without ending it: see bearStall.
//
// Whatever the client sends is file data to the server; a client that
// breaks the framing (sequence out of order) gets the server's error. A
// client that stops mid-file fails the relay: the caller closes the
// backend, so the server rolls the statement back, and the client.
func (r *relayer) localInfile() error {
	if err := r.cl.W.Flush(); err != nil {
		return fmt.Errorf("%w: %v", ErrClientSide, err)
	}
	if r.restore == nil {
		r.restore = bearStall(r.be.Conn)
	}
	cont := false
	for {
		f, err := r.cl.RelayFrame(r.be.W)
		if err != nil {
			if _, ok := errors.AsType[*WriteError](err); ok {
				return err // the backend's
			}
			return fmt.Errorf("%w: LOAD DATA LOCAL file data: %w", ErrClientSide, err)
		}
		if f.Len == 0 && !cont {
			return r.be.W.Flush()
		}
		cont = f.Len == MaxPayload
	}
}

// RelayPrepare relays a COM_STMT_PREPARE answer like RelayResponse but
// replaces the statement id the backend chose with proxyID, so the
// client sees ids that survive a change of backend connection.
func RelayPrepare(be, cl *Conn, caps uint32, proxyID uint32) (Result, error) {
	r := &relayer{be: be, cl: cl, caps: caps}
	err := r.prepareRewrite(proxyID, true)
	if ferr := cl.W.Flush(); ferr != nil && err == nil {
		err = fmt.Errorf("%w: %v", ErrClientSide, ferr)
	}
	return r.res, err
}

func (r *relayer) prepareRewrite(proxyID uint32, rewrite bool) error {
	p, err := r.be.ReadPacket()
	if err != nil {
		return err
	}
	seq := r.be.Seq - 1
	if len(p) > 0 && p[0] == HeaderErr {
		r.res.Err = ParseError(p)
	} else if len(p) < 12 || p[0] != HeaderOK {
		return ErrProtocol
	} else {
		r.res.StmtID = binary.LittleEndian.Uint32(p[1:])
		r.res.Columns = u16(p[5:])
		r.res.Params = u16(p[7:])
		if rewrite {
			binary.LittleEndian.PutUint32(p[1:], proxyID)
		}
	}
	r.cl.Seq = seq
	if err := r.cl.WritePacket(p); err != nil {
		return fmt.Errorf("%w: %v", ErrClientSide, err)
	}
	r.res.Relayed++
	if r.res.Err != nil {
		return nil
	}
	for _, n := range []uint16{r.res.Params, r.res.Columns} {
		if n == 0 {
			continue
		}
		for i := 0; i < int(n); i++ {
			if _, err := r.frame(); err != nil {
				return err
			}
		}
		if r.caps&ClientDeprecateEOF == 0 {
			if _, err := r.frame(); err != nil {
				return err
			}
		}
	}
	return nil
}
