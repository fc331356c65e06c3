package wire

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"slices"
	"testing"
)

// hdr is a frame header as it stands on the wire.
func hdr(n int, seq uint8) []byte { return []byte{byte(n), byte(n >> 8), byte(n >> 16), seq} }

// sameWriter compares what is written to it with the concatenation of
// want, without a copy of either (the big cases would otherwise hold
// several 16 MiB buffers, slow under -race).
type sameWriter struct {
	want [][]byte
	diff bool
}

func (w *sameWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 && !w.diff {
		for len(w.want) > 0 && len(w.want[0]) == 0 {
			w.want = w.want[1:]
		}
		if len(w.want) == 0 {
			w.diff = true
			break
		}
		k := min(len(p), len(w.want[0]))
		w.diff = !bytes.Equal(p[:k], w.want[0][:k])
		p, w.want[0] = p[k:], w.want[0][k:]
	}
	return n, nil
}

func (w *sameWriter) same() bool {
	for _, b := range w.want {
		if len(b) > 0 {
			return false
		}
	}
	return !w.diff
}

// frameReader reads the concatenation of frames, without a copy.
func frameReader(frames [][]byte) io.Reader {
	rs := make([]io.Reader, len(frames))
	for i, f := range frames {
		rs[i] = bytes.NewReader(f)
	}
	return io.MultiReader(rs...)
}

// TestFraming: the bytes of a packet on the wire, from each writer (the
// function, the append form and Conn), and each reader (Reader, Conn's
// two paths) reading them back whole with the sequence number after.
func TestFraming(t *testing.T) {
	big := bytes.Repeat([]byte{'x'}, MaxPayload+1)
	for _, tc := range []struct {
		name    string
		seq     uint8
		payload []byte
		want    [][]byte // the frames: header, payload, header, payload, ...
		next    uint8
	}{
		{"empty", 0, nil, [][]byte{hdr(0, 0)}, 1},
		{"small", 7, []byte("abc"), [][]byte{hdr(3, 7), []byte("abc")}, 8},
		// A payload of exactly MaxPayload is followed by an empty frame:
		// without it the reader would wait for a continuation.
		{"exactly the max", 0, big[:MaxPayload], [][]byte{{0xff, 0xff, 0xff, 0}, big[:MaxPayload], {0, 0, 0, 1}}, 2},
		// One byte more is split at 0xffffff; sequence numbers count
		// frames and wrap at 255.
		{"split and wrap", 255, big, [][]byte{{0xff, 0xff, 0xff, 255}, big[:MaxPayload], {1, 0, 0, 0}, {'x'}}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			same := func() *sameWriter { return &sameWriter{want: slices.Clone(tc.want)} }
			w := same()
			next, err := WritePacket(w, tc.seq, tc.payload)
			if err != nil || next != tc.next || !w.same() {
				t.Fatalf("WritePacket: next %d (want %d), %v, same bytes: %v", next, tc.next, err, w.same())
			}
			w = same()
			if got := AppendPacket([]byte("pre"), tc.seq, tc.payload); !bytes.Equal(got[:3], []byte("pre")) {
				t.Fatal("AppendPacket lost what dst held")
			} else if _, _ = w.Write(got[3:]); !w.same() {
				t.Fatal("AppendPacket differs from WritePacket")
			}
			w = same()
			c := &Conn{W: bufio.NewWriter(w), Seq: tc.seq}
			if err := c.WriteFlush(tc.payload); err != nil || c.Seq != tc.next || !w.same() {
				t.Fatalf("Conn.WriteFlush: seq %d, %v, same bytes: %v", c.Seq, err, w.same())
			}

			r := &Reader{R: frameReader(tc.want)}
			p, err := r.ReadPacket()
			if err != nil || !bytes.Equal(p, tc.payload) || p == nil || r.Seq != tc.next {
				t.Fatalf("Reader: %d bytes (nil %v), seq %d, %v", len(p), p == nil, r.Seq, err)
			}
			for _, reuse := range []bool{false, true} {
				c := &Conn{R: bufio.NewReader(frameReader(tc.want))}
				read := c.ReadPacket
				if reuse {
					read = c.ReadPacketReuse
				}
				p, err := read()
				if err != nil || !bytes.Equal(p, tc.payload) || c.Seq != tc.next {
					t.Fatalf("Conn reuse=%v: %d bytes, seq %d, %v", reuse, len(p), c.Seq, err)
				}
				if _, err := read(); err != io.EOF {
					t.Fatalf("Conn reuse=%v: after the packet: %v", reuse, err)
				}
			}
		})
	}
}

// TestReaderIgnoresSequence: frames whose numbers jump (MariaDB's reset
// after a semi-sync ACK request) read as packets; Seq follows the wire.
func TestReaderIgnoresSequence(t *testing.T) {
	stream := bytes.Join([][]byte{hdr(2, 9), []byte("ev"), hdr(1, 0), []byte("x"), hdr(0, 200)}, nil)
	r := &Reader{R: bytes.NewReader(stream)}
	for _, want := range []struct {
		p   string
		seq uint8
	}{{"ev", 10}, {"x", 1}, {"", 201}} {
		p, err := r.ReadPacket()
		if err != nil || string(p) != want.p || r.Seq != want.seq {
			t.Fatalf("%q seq %d %v, want %q seq %d", p, r.Seq, err, want.p, want.seq)
		}
	}
}

// TestReaderBeforeFrame: the hook runs once per frame, continuation
// frames included, and its error ends the read before any byte is taken.
func TestReaderBeforeFrame(t *testing.T) {
	calls := 0
	r := &Reader{R: bigStream(1), BeforeFrame: func() error { calls++; return nil }}
	if p, err := r.ReadPacket(); err != nil || len(p) != MaxPayload+1 || calls != 2 {
		t.Fatalf("%d bytes, %d calls, %v", len(p), calls, err)
	}
	boom := errors.New("deadline")
	r = &Reader{R: bytes.NewReader([]byte{1, 0, 0, 0, 'a'}), BeforeFrame: func() error { return boom }}
	if _, err := r.ReadPacket(); !errors.Is(err, boom) {
		t.Fatalf("hook error: %v", err)
	}
}

// TestReaderErrors: a packet over Limit fails at its header; a stream
// cut inside a header or a payload is io.ErrUnexpectedEOF, never a short
// packet.
func TestReaderErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		stream []byte
		limit  int
		want   error
	}{
		{"over the limit", append(hdr(5, 0), "hello"...), 4, ErrTooBig},
		{"at the limit", append(hdr(5, 0), "hello"...), 5, nil},
		{"continuation over the limit", nil, MaxPayload, ErrTooBig}, // bigStream(1)
		{"cut header", []byte{5, 0}, 0, io.ErrUnexpectedEOF},
		{"cut payload", append(hdr(5, 0), "hel"...), 0, io.ErrUnexpectedEOF},
		{"cut before continuation", nil, 0, io.EOF}, // bigStream(-1)
		{"nothing", nil, 0, io.EOF},
	} {
		var src io.Reader = bytes.NewReader(tc.stream)
		switch tc.name {
		case "continuation over the limit":
			src = bigStream(1)
		case "cut before continuation":
			src = bigStream(-1)
		}
		r := &Reader{R: src, Limit: tc.limit}
		_, err := r.ReadPacket()
		if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
}

// bigStream is a packet of MaxPayload zero bytes and then, for tail >= 0,
// a continuation frame of tail bytes; for tail < 0 the stream ends where
// the continuation should start. Nothing of it is held in memory.
func bigStream(tail int) io.Reader {
	parts := []io.Reader{bytes.NewReader(hdr(MaxPayload, 0)), io.LimitReader(zeros{}, MaxPayload)}
	if tail >= 0 {
		parts = append(parts, bytes.NewReader(hdr(tail, 1)), io.LimitReader(zeros{}, int64(tail)))
	}
	return io.MultiReader(parts...)
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// TestErrorPacket: ERR payloads byte by byte, with and without SQLSTATE.
func TestErrorPacket(t *testing.T) {
	withState := append([]byte{0xff, 0x10, 0x04, '#', '0', '8', '0', '0', '4'}, "Too many connections"...)
	if got := (&Error{Code: 1040, SQLState: "08004", Message: "Too many connections"}).Packet(); !bytes.Equal(got, withState) {
		t.Fatalf("ERR with state: % x", got)
	}
	// A state that is not 5 characters goes out as HY000, the general one.
	if got := (&Error{Code: 1047, Message: "x"}).Packet(); !bytes.Equal(got, []byte{0xff, 0x17, 0x04, '#', 'H', 'Y', '0', '0', '0', 'x'}) {
		t.Fatalf("ERR without state: % x", got)
	}
	// Before the handshake there is no state marker (MariaDB's 1130).
	noState := []byte{0xff, 0x6a, 0x04, 'n', 'o'}
	if got := PreHandshakeError(1130, "no"); !bytes.Equal(got, noState) {
		t.Fatalf("pre-handshake ERR: % x", got)
	}
	for _, tc := range []struct {
		p    []byte
		want Error
	}{
		{withState, Error{Code: 1040, SQLState: "08004", Message: "Too many connections"}},
		{noState, Error{Code: 1130, SQLState: "HY000", Message: "no"}},
		{[]byte{0xff, 0x01, 0x00}, Error{Code: 1, SQLState: "HY000"}},
		{[]byte{0xff, 0x01}, Error{Code: 2027, SQLState: "HY000", Message: "malformed error packet"}},
		{[]byte{0x00, 0x01, 0x00}, Error{Code: 2027, SQLState: "HY000", Message: "malformed error packet"}},
	} {
		if got := ParseError(tc.p); *got != tc.want {
			t.Errorf("ParseError(% x) = %+v, want %+v", tc.p, *got, tc.want)
		}
	}
}

// TestOKAndEOF: OK and EOF payloads byte by byte, and StatusOf reading
// their flags back.
func TestOKAndEOF(t *testing.T) {
	status := uint16(StatusInTrans | StatusAutocommit | StatusMoreResults)
	ok := OK(1, 300, status)
	// header, affected rows 1, insert id 300 (0xfc + 2 bytes), status, warnings
	if want := []byte{0x00, 0x01, 0xfc, 0x2c, 0x01, 0x0b, 0x00, 0x00, 0x00}; !bytes.Equal(ok, want) {
		t.Fatalf("OK: % x, want % x", ok, want)
	}
	eof := EOF(2, StatusCursorExists)
	if want := []byte{0xfe, 0x02, 0x00, 0x40, 0x00}; !bytes.Equal(eof, want) {
		t.Fatalf("EOF: % x, want % x", eof, want)
	}
	for _, tc := range []struct {
		p    []byte
		want uint16
		ok   bool
	}{
		{ok, status, true},
		{eof, StatusCursorExists, true},
		// Under CLIENT_DEPRECATE_EOF an OK with header 0xfe ends rows.
		{append([]byte{0xfe}, ok[1:]...), status, true},
		{[]byte{0xff, 1, 0}, 0, false},
		{[]byte{0x00, 0x01}, 0, false},
		{nil, 0, false},
	} {
		if got, ok := StatusOf(tc.p); got != tc.want || ok != tc.ok {
			t.Errorf("StatusOf(% x) = %#x %v, want %#x %v", tc.p, got, ok, tc.want, tc.ok)
		}
	}
}

// refFrames is the framing rule written plainly: the payloads of the
// whole packets in b, in order, and the sequence number after each.
func refFrames(b []byte) (packets [][]byte, seqs []uint8) {
	var cur []byte
	for len(b) >= 4 {
		n := frameLen(b)
		seq := b[3]
		if len(b)-4 < n {
			break
		}
		cur = append(cur, b[4:4+n]...)
		b = b[4+n:]
		if n < MaxPayload {
			packets, seqs = append(packets, append([]byte{}, cur...)), append(seqs, seq+1)
			cur = nil
		}
	}
	return packets, seqs
}

// FuzzReadPacket reads arbitrary bytes with Reader and with both of
// Conn's read paths: all three agree with the framing rule (refFrames)
// on every whole packet, stop with an error where the stream is cut,
// and what they read, written again, is the same bytes.
func FuzzReadPacket(f *testing.F) {
	f.Add([]byte{3, 0, 0, 0, 'a', 'b', 'c'})
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 1})
	f.Add([]byte{2, 0, 0, 9, 'e', 'v', 1, 0, 0, 0, 'x'})
	f.Add([]byte{0xff, 0xff, 0xff, 0, 1})
	f.Add(append(EOF(0, StatusAutocommit), OK(0, 0, 0)...))
	f.Fuzz(func(t *testing.T, b []byte) {
		packets, seqs := refFrames(b)
		r := &Reader{R: bytes.NewReader(b)}
		c := &Conn{R: bufio.NewReaderSize(bytes.NewReader(b), 64)}
		cr := &Conn{R: bufio.NewReaderSize(bytes.NewReader(b), 64)}
		for i := 0; ; i++ {
			p1, err1 := r.ReadPacket()
			p2, err2 := c.ReadPacket()
			p3, err3 := cr.ReadPacketReuse()
			if (err1 == nil) != (err2 == nil) || (err1 == nil) != (err3 == nil) {
				t.Fatalf("packet %d: read paths disagree: %v / %v / %v", i, err1, err2, err3)
			}
			if err1 != nil {
				if i != len(packets) {
					t.Fatalf("stopped after %d packets, want %d: %v", i, len(packets), err1)
				}
				return
			}
			if i >= len(packets) {
				t.Fatalf("packet %d read past the whole packets", i)
			}
			if !bytes.Equal(p1, packets[i]) || !bytes.Equal(p2, packets[i]) || !bytes.Equal(p3, packets[i]) {
				t.Fatalf("packet %d differs from the framing rule", i)
			}
			if r.Seq != seqs[i] || c.Seq != seqs[i] || cr.Seq != seqs[i] {
				t.Fatalf("packet %d: seq %d/%d/%d, want %d", i, r.Seq, c.Seq, cr.Seq, seqs[i])
			}
			again := &Reader{R: bytes.NewReader(AppendPacket(nil, 0, p1))}
			if p, err := again.ReadPacket(); err != nil || !bytes.Equal(p, p1) {
				t.Fatalf("packet %d does not round-trip: %v", i, err)
			}
		}
	})
}
