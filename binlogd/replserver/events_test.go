package replserver

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"hash/crc32"
	"strings"
	"testing"

	"github.com/go-mysql-org/go-mysql/replication"

	"phxgo/binlogd/binlog"
)

func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func checkCRC(t *testing.T, ev []byte) {
	t.Helper()
	n := len(ev) - 4
	if got, want := binary.LittleEndian.Uint32(ev[n:]), crc32.ChecksumIEEE(ev[:n]); got != want {
		t.Fatalf("crc %08x, want %08x", got, want)
	}
}

// Golden bytes, checked by hand against MariaDB's log_event.h layouts:
// header = timestamp(4) type(1) server_id(4) event_size(4) log_pos(4) flags(2).
func TestGoldenRotate(t *testing.T) {
	got := fakeRotate(100, "phxgo-bin.000001", 4)
	want := unhex(t, `00000000 04 64000000 2f000000 00000000 2000
		0400000000000000 706878676f2d62696e2e303030303031`)
	if !bytes.Equal(got[:len(got)-4], want) {
		t.Fatalf("rotate\n got %x\nwant %x", got[:len(got)-4], want)
	}
	checkCRC(t, got)
}

func TestGoldenHeartbeat(t *testing.T) {
	got := heartbeat(100, "phxgo-bin.000001", 0x1234)
	want := unhex(t, `00000000 1b 64000000 27000000 34120000 2000 706878676f2d62696e2e303030303031`)
	if !bytes.Equal(got[:len(got)-4], want) {
		t.Fatalf("heartbeat\n got %x\nwant %x", got[:len(got)-4], want)
	}
	checkCRC(t, got)
}

func TestGoldenGTIDList(t *testing.T) {
	got := gtidList(0x01020304, 100, 0x55, binlog.GTIDList{{Domain: 0, Server: 1, Seq: 41}})
	want := unhex(t, `04030201 a3 64000000 2b000000 55000000 0000
		01000000 00000000 01000000 2900000000000000`)
	if !bytes.Equal(got[:len(got)-4], want) {
		t.Fatalf("gtid list\n got %x\nwant %x", got[:len(got)-4], want)
	}
	checkCRC(t, got)
}

// TestFormatDescriptionMatchesCapture: our FDE is the captured real 10.11
// event except for the fields we set on purpose.
func TestFormatDescriptionMatchesCapture(t *testing.T) {
	got := formatDescription(0x01020304, 100, 256)
	if len(got) != len(capturedFDE) || len(got) != 252 {
		t.Fatalf("len %d, captured %d", len(got), len(capturedFDE))
	}
	checkCRC(t, got)
	// Same post-header table, header length, binlog version, checksum alg.
	if !bytes.Equal(got[19+57:len(got)-4], capturedFDE[19+57:len(got)-4]) {
		t.Fatal("post-header table or checksum alg differ from the capture")
	}
	if !bytes.Equal(got[19:21], capturedFDE[19:21]) || got[19+56] != 19 || got[len(got)-5] != checksumCRC32 {
		t.Fatal("binlog version / header length / alg")
	}
	wantHead := unhex(t, `04030201 0f 64000000 fc000000 00010000 0000`)
	if !bytes.Equal(got[:19], wantHead) {
		t.Fatalf("header %x", got[:19])
	}
	if v := string(bytes.TrimRight(got[21:71], "\x00")); v != fdeServerVersion {
		t.Fatalf("server version %q", v)
	}
	if created := binary.LittleEndian.Uint32(got[71:75]); created != 0 {
		t.Fatalf("created %d", created)
	}
	// go-mysql's parser (with CRC verification) reads it as 10.11 + CRC32.
	p := replication.NewBinlogParser()
	p.SetVerifyChecksum(true)
	e, err := p.Parse(got)
	if err != nil {
		t.Fatal(err)
	}
	fde := e.Event.(*replication.FormatDescriptionEvent)
	if fde.ChecksumAlgorithm != replication.BINLOG_CHECKSUM_ALG_CRC32 || fde.Version != 4 {
		t.Fatalf("%+v", fde)
	}
}

func TestRelocateRewritesPosAndCRC(t *testing.T) {
	ev := heartbeat(7, "f", 10)
	out, err := relocate([]byte{0}, ev, 999)
	if err != nil {
		t.Fatal(err)
	}
	out = out[1:]
	if binary.LittleEndian.Uint32(out[logPosOffset:]) != 999 {
		t.Fatal("log_pos not rewritten")
	}
	checkCRC(t, out)
	if binary.LittleEndian.Uint32(ev[logPosOffset:]) != 10 {
		t.Fatal("source event modified")
	}
	if _, err := relocate(nil, ev[:10], 1); err == nil {
		t.Fatal("short event accepted")
	}
}
