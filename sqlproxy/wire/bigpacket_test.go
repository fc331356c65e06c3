package wire

import (
	"bufio"
	"bytes"
	"testing"
)

// TestBigStatementThenSmall: sysbench prepare sends multi-row INSERTs of
// about 512 KiB, above ReadPacketReuse's 64 KiB scratch bound and above
// the read buffer, each followed by small commands. Each packet reads
// back whole with the sequence number after it, whichever path it took,
// and the relay of a frame longer than the read buffer leaves the next
// frame aligned (a misaligned one reaches the client as 2027, malformed).
func TestBigStatementThenSmall(t *testing.T) {
	big := bytes.Repeat([]byte("(1,'x'),"), 512<<10/8)
	big[0] = ComQuery
	var stream bytes.Buffer
	for _, p := range [][]byte{big, {ComPing}, big, []byte{ComQuery, 'S'}} {
		if _, err := WritePacket(&stream, 0, p); err != nil {
			t.Fatal(err)
		}
	}
	wire := stream.Bytes()

	c := &Conn{R: bufio.NewReaderSize(bytes.NewReader(wire), DefaultBufferSize)}
	for i, want := range [][]byte{big, {ComPing}, big, {ComQuery, 'S'}} {
		c.Seq = 0
		p, err := c.ReadPacketReuse()
		if err != nil || !bytes.Equal(p, want) || c.Seq != 1 {
			t.Fatalf("packet %d: %d bytes (want %d), seq %d, %v", i, len(p), len(want), c.Seq, err)
		}
	}

	src := &Conn{R: bufio.NewReaderSize(bytes.NewReader(wire), DefaultBufferSize)}
	var out bytes.Buffer
	dst := bufio.NewWriter(&out)
	for i, want := range []int{len(big), 1, len(big), 2} {
		f, err := src.RelayFrame(dst)
		if err != nil || f.Len != want || f.Seq != 0 || len(f.Head) == 0 || f.Head[0] != ComQuery && f.Head[0] != ComPing {
			t.Fatalf("frame %d: %+v, %v", i, f, err)
		}
	}
	if err := dst.Flush(); err != nil || !bytes.Equal(out.Bytes(), wire) {
		t.Fatalf("relayed bytes differ from the source (%d vs %d), %v", out.Len(), len(wire), err)
	}
}

// TestRelayCutMidFrame: a backend that dies inside a frame longer than
// the read buffer (a big row) has already passed part of that frame to
// the client's buffer. The relay must report it as relayed, so the
// session closes the client instead of answering with an ERR packet
// after the cut bytes (which the client reads as a malformed packet).
func TestRelayCutMidFrame(t *testing.T) {
	n := 2 * DefaultBufferSize
	payload := bytes.Repeat([]byte{'r'}, n)
	payload[0] = 1 // a column count
	var stream bytes.Buffer
	if _, err := WritePacket(&stream, 1, payload); err != nil {
		t.Fatal(err)
	}
	cut := stream.Bytes()[:4+n-1000] // the backend's connection ends here
	be := &Conn{R: bufio.NewReaderSize(bytes.NewReader(cut), DefaultBufferSize)}
	var client bytes.Buffer
	cl := &Conn{W: bufio.NewWriterSize(&client, DefaultBufferSize)}
	res, err := RelayResponse(be, cl, ComQuery, 0)
	if err == nil {
		t.Fatal("a cut response relayed without error")
	}
	if client.Len() == 0 {
		t.Fatal("nothing reached the client: the case this test is for did not happen")
	}
	if res.Relayed == 0 {
		t.Fatalf("%d bytes of a cut frame reached the client but Relayed is 0: the session would answer after them (%v)", client.Len(), err)
	}
}
