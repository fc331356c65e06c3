package wire

import (
	"bufio"
	"bytes"
	"testing"
)

// packets frames payloads with sequence ids from 1, as a server's answer.
func packets(t *testing.T, payloads ...[]byte) []byte {
	t.Helper()
	var b bytes.Buffer
	for i, p := range payloads {
		if _, err := WritePacket(&b, uint8(i+1), p); err != nil {
			t.Fatal(err)
		}
	}
	return b.Bytes()
}

// relayOnce relays one COM_STMT_EXECUTE answer from a backend sending
// stream to a client, with the given MariaDBCacheMetadata negotiation on
// each side (no DEPRECATE_EOF: every EOF packet is there).
func relayOnce(t *testing.T, stream []byte, beFlag, clFlag bool) ([]byte, Result) {
	t.Helper()
	be := &Conn{R: bufio.NewReaderSize(bytes.NewReader(stream), DefaultBufferSize), MetaFlag: beFlag}
	var out bytes.Buffer
	cl := &Conn{W: bufio.NewWriterSize(&out, DefaultBufferSize), MetaFlag: clFlag}
	res, err := RelayResponse(be, cl, ComStmtExecute, 0)
	if err != nil {
		t.Fatalf("relay: %v", err)
	}
	return out.Bytes(), res
}

// TestRelayCacheMetadata: with MariaDBCacheMetadata on both sides the
// relay passes the answer through and follows the "metadata follows"
// byte (0: no column definitions, so the EOF after them comes next);
// with it on the client's side only, the relay adds the byte (1) to the
// column count and nothing else; OK and ERR answers pass unchanged.
func TestRelayCacheMetadata(t *testing.T) {
	eof := []byte{HeaderEOF, 0, 0, 0x02, 0}
	def := []byte{3, 'd', 'e', 'f', 0, 0, 0, 1, 'c', 0, 0x0c, 0x21, 0, 10, 0, 0, 0, 0xfd, 0, 0, 0, 0, 0}
	row := []byte{0x00, 0x00, 1, 'v'}

	skipped := packets(t, []byte{2, 0}, eof, row, row, eof) // 2 columns, definitions cached
	out, res := relayOnce(t, skipped, true, true)
	if !bytes.Equal(out, skipped) || res.Relayed != 5 || !res.HasStatus || res.Err != nil {
		t.Fatalf("metadata skipped: relayed %x (%d frames, %+v), want the stream unchanged", out, res.Relayed, res)
	}

	full := packets(t, []byte{2, 1}, def, def, eof, row, eof)
	out, res = relayOnce(t, full, true, true)
	if !bytes.Equal(out, full) || res.Relayed != 6 {
		t.Fatalf("metadata sent: relayed %x (%d frames), want the stream unchanged", out, res.Relayed)
	}

	plain := packets(t, []byte{2}, def, def, eof, row, eof) // a backend without the capability
	want := packets(t, []byte{2, 1}, def, def, eof, row, eof)
	out, res = relayOnce(t, plain, false, true)
	if !bytes.Equal(out, want) || res.Relayed != 6 {
		t.Fatalf("added flag: relayed %x, want %x", out, want)
	}
	if out, _ := relayOnce(t, plain, false, false); !bytes.Equal(out, plain) {
		t.Fatalf("no capability anywhere: relayed %x, want the stream unchanged", out)
	}

	for name, p := range map[string][]byte{
		"ok":  {HeaderOK, 0, 0, 0x02, 0, 0, 0},
		"err": (&Error{Code: 1064, SQLState: "42000", Message: "syntax"}).Packet(),
	} {
		stream := packets(t, p)
		if out, _ := relayOnce(t, stream, false, true); !bytes.Equal(out, stream) {
			t.Errorf("%s: relayed %x, want it unchanged", name, out)
		}
	}

	if _, err := RelayResponse(&Conn{R: bufio.NewReader(bytes.NewReader(packets(t, []byte{2})))}, &Conn{W: bufio.NewWriter(&bytes.Buffer{})}, ComStmtExecute, 0); err == nil {
		t.Fatal("a truncated answer relayed without error")
	}
	flagless := packets(t, []byte{2}, eof)
	be := &Conn{R: bufio.NewReader(bytes.NewReader(flagless)), MetaFlag: true}
	if _, err := RelayResponse(be, &Conn{W: bufio.NewWriter(&bytes.Buffer{})}, ComStmtExecute, 0); err != ErrProtocol {
		t.Fatalf("a column count without its flag: %v, want ErrProtocol", err)
	}
}

// TestResponseExtCaps: a handshake response carries MariaDB's extended
// capabilities in the filler's last 4 bytes only when ClientMySQL is
// clear, and ParseResponse reads them back only then.
func TestResponseExtCaps(t *testing.T) {
	base := uint32(ClientProtocol41 | ClientSecureConn | ClientPluginAuth)
	for _, tc := range []struct {
		caps, ext, want uint32
	}{
		{base, MariaDBCacheMetadata, MariaDBCacheMetadata},
		{base | ClientMySQL, MariaDBCacheMetadata, 0},
		{base, 0, 0},
	} {
		r := &Response{Caps: tc.caps, ExtCaps: tc.ext, Charset: 45, User: "app", Auth: make([]byte, 20), Plugin: NativePlugin}
		p := r.Encode()
		got, err := ParseResponse(p)
		if err != nil {
			t.Fatal(err)
		}
		if got.ExtCaps != tc.want || got.User != "app" || got.Plugin != NativePlugin {
			t.Errorf("caps %#x ext %#x: parsed %+v, want ext %#x", tc.caps, tc.ext, got, tc.want)
		}
	}
}
