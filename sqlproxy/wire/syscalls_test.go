package wire

import (
	"bufio"
	"bytes"
	"testing"
)

// countRW counts the calls reaching the socket: each is one read(2) or
// write(2) on a real connection.
type countRW struct {
	r      *bytes.Reader
	w      bytes.Buffer
	reads  int
	writes int
}

func (c *countRW) Read(p []byte) (int, error) {
	c.reads++
	return c.r.Read(p)
}

func (c *countRW) Write(p []byte) (int, error) {
	c.writes++
	return c.w.Write(p)
}

// TestPointSelectSyscalls: a point select costs the relay one read per
// side and one write per side when each side's bytes arrive in one
// segment (issue 19: HAProxy's count). The command is read whole from the
// client's read buffer, sent in one write, the backend's result set (five
// packets) is read by one read and reaches the client as one write, not
// one per packet.
func TestPointSelectSyscalls(t *testing.T) {
	row := AppendLenEncString(nil, []byte("42"))
	coldef := AppendLenEncString(nil, []byte("def")) // enough: the relay never decodes it
	for _, tc := range []struct {
		name    string
		caps    uint32
		packets [][]byte
	}{
		{"eof", 0, [][]byte{{1}, coldef, EOF(0, StatusAutocommit), row, EOF(0, StatusAutocommit)}},
		{"deprecate_eof", ClientDeprecateEOF, [][]byte{{1}, coldef, row, append([]byte{HeaderEOF}, OK(0, 0, StatusAutocommit)[1:]...)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var resp []byte
			for i, p := range tc.packets {
				resp = AppendPacket(resp, uint8(i+1), p)
			}
			query := AppendPacket(nil, 0, []byte("\x03SELECT c FROM sbtest1 WHERE id=1"))
			clSock := &countRW{r: bytes.NewReader(query)}
			beSock := &countRW{r: bytes.NewReader(resp)}
			cl := &Conn{R: bufio.NewReaderSize(clSock, DefaultBufferSize), W: bufio.NewWriterSize(clSock, DefaultBufferSize)}
			be := &Conn{R: bufio.NewReaderSize(beSock, DefaultBufferSize), W: bufio.NewWriterSize(beSock, DefaultBufferSize)}

			pkt, err := cl.ReadPacketReuse()
			if err != nil {
				t.Fatal(err)
			}
			be.Seq = 0
			if err := be.WriteFlush(pkt); err != nil {
				t.Fatal(err)
			}
			res, err := RelayResponse(be, cl, pkt[0], tc.caps)
			if err != nil || res.Err != nil || !res.HasStatus || res.Relayed != len(tc.packets) {
				t.Fatalf("relay: %+v, %v", res, err)
			}
			if !bytes.Equal(clSock.w.Bytes(), resp) || !bytes.Equal(beSock.w.Bytes(), query) {
				t.Fatal("relayed bytes differ from the source")
			}
			if clSock.reads != 1 || clSock.writes != 1 || beSock.reads != 1 || beSock.writes != 1 {
				t.Fatalf("client %d reads %d writes, backend %d reads %d writes; want 1 each",
					clSock.reads, clSock.writes, beSock.reads, beSock.writes)
			}
		})
	}
}
