package reseed

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	pb "phxgo/proto"
)

// The attacks on a received stream (bound.go): a peer that stops
// sending, one that holds the stream open with empty messages, one that
// sends more than the disk can take. Each must fail the copy with a
// clear error, remove the partial copy and leave the old datadir as it
// was; none may hang the command.

// xbstream returns a real xbstream of one file of n bytes.
func xbstream(t *testing.T, n int) []byte {
	t.Helper()
	if _, err := exec.LookPath("mbstream"); err != nil {
		t.Skip("mbstream not installed")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f"), make([]byte, n), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("mbstream", "-c", "f")
	cmd.Dir = dir
	b, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// oldDataDir makes mysql/data holding an "old" ibdata1.
func oldDataDir(t *testing.T) string {
	t.Helper()
	data := filepath.Join(t.TempDir(), "mysql", "data")
	if err := os.MkdirAll(data, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(data, "ibdata1"), []byte("old"), 0o640); err != nil {
		t.Fatal(err)
	}
	return data
}

// checkUntouched: the old datadir is as it was and no copy is left.
func checkUntouched(t *testing.T, data string) {
	t.Helper()
	if b, _ := os.ReadFile(filepath.Join(data, "ibdata1")); string(b) != "old" {
		t.Fatalf("old datadir changed: %q", b)
	}
	if left, _ := filepath.Glob(data + ".*"); len(left) != 0 {
		t.Fatalf("left behind: %v", left)
	}
}

// fakePeer serves msgs, then blocks until the test ends (a peer that
// holds the stream open and sends nothing), or with endless set keeps
// sending empty chunks.
func fakePeer(t *testing.T, msgs []*pb.BackupChunk, endless bool) func() (*pb.BackupChunk, error) {
	hold := make(chan struct{})
	t.Cleanup(func() { close(hold) })
	return func() (*pb.BackupChunk, error) {
		if len(msgs) > 0 {
			m := msgs[0]
			msgs = msgs[1:]
			return m, nil
		}
		if endless {
			select {
			case <-hold:
			case <-time.After(5 * time.Millisecond):
				return &pb.BackupChunk{}, nil
			}
		}
		<-hold
		return nil, errors.New("the test ended")
	}
}

// receiveWithin runs Receive and fails the test if it does not return
// within a bound far above the one under test: the attack is a hang.
func receiveWithin(t *testing.T, recv func() (*pb.BackupChunk, error), tg Target) (Result, error, string) {
	t.Helper()
	var out strings.Builder
	tg.Progress = &out
	type ret struct {
		res Result
		err error
	}
	done := make(chan ret, 1)
	go func() {
		res, err := Receive(context.Background(), recv, tg)
		done <- ret{res, err}
	}()
	select {
	case r := <-done:
		return r.res, r.err, out.String()
	case <-time.After(30 * time.Second):
		t.Fatal("Receive did not return within 30s: the stream hangs it")
	}
	panic("unreachable")
}

// TestReceiveStalls: the source sends half a backup, then nothing while
// holding the stream open.
func TestReceiveStalls(t *testing.T) {
	stream := xbstream(t, 1<<16)
	data := oldDataDir(t)
	recv := fakePeer(t, []*pb.BackupChunk{{Info: &pb.BackupInfo{SourceNode: 3, EstimatedBytes: uint64(len(stream))}}, {Data: stream[:len(stream)/2]}}, false)
	start := time.Now()
	_, err, out := receiveWithin(t, recv, Target{DataDir: data, Stall: 200 * time.Millisecond})
	if !errors.Is(err, ErrStalled) || !strings.Contains(err.Error(), "from node 3 broke after") || !strings.Contains(err.Error(), "200ms") {
		t.Fatalf("err = %v, want a stall of node 3's stream", err)
	}
	if d := time.Since(start); d < 200*time.Millisecond {
		t.Fatalf("gave up after %s, before the stall bound", d)
	}
	checkUntouched(t, data)
	if !strings.Contains(out, "reseed: received 32.") {
		t.Fatalf("no final progress line:\n%s", out)
	}
	t.Log(err)
}

// TestReceiveStallsBeforeInfo: the source accepts the RPC and never
// sends its first message.
func TestReceiveStallsBeforeInfo(t *testing.T) {
	data := oldDataDir(t)
	_, err, _ := receiveWithin(t, fakePeer(t, nil, false), Target{DataDir: data, Stall: 100 * time.Millisecond})
	if !errors.Is(err, ErrStalled) {
		t.Fatalf("err = %v, want ErrStalled", err)
	}
	checkUntouched(t, data)
}

// TestReceiveEmptyChunksStall: messages without data do not keep the
// stream alive.
func TestReceiveEmptyChunksStall(t *testing.T) {
	stream := xbstream(t, 1<<16)
	data := oldDataDir(t)
	recv := fakePeer(t, []*pb.BackupChunk{{Info: &pb.BackupInfo{SourceNode: 3}}, {Data: stream[:100]}}, true)
	_, err, _ := receiveWithin(t, recv, Target{DataDir: data, Stall: 300 * time.Millisecond})
	if !errors.Is(err, ErrStalled) {
		t.Fatalf("err = %v, want ErrStalled", err)
	}
	checkUntouched(t, data)
}

// TestReceiveSlowIsNoStall: a source slower than the stall bound per
// whole copy, but never silent that long, finishes its stream (mbstream
// takes it; the fake copy then fails at --prepare, which is not a
// stall).
func TestReceiveSlowIsNoStall(t *testing.T) {
	stream := xbstream(t, 1<<16)
	data := oldDataDir(t)
	var msgs []*pb.BackupChunk
	msgs = append(msgs, &pb.BackupChunk{Info: &pb.BackupInfo{SourceNode: 3}})
	for i := 0; i < len(stream); i += len(stream) / 16 {
		msgs = append(msgs, &pb.BackupChunk{Data: stream[i:min(len(stream), i+len(stream)/16)]})
	}
	recv := func() (*pb.BackupChunk, error) {
		if len(msgs) == 0 {
			return nil, errors.New("test: the end") // not io.EOF: no --prepare of a non-backup
		}
		time.Sleep(100 * time.Millisecond) // the source's pace, the thing under test
		m := msgs[0]
		msgs = msgs[1:]
		return m, nil
	}
	_, err, _ := receiveWithin(t, recv, Target{DataDir: data, Stall: 500 * time.Millisecond})
	if errors.Is(err, ErrStalled) || err == nil || !strings.Contains(err.Error(), "test: the end") {
		t.Fatalf("err = %v, want the stream's end, not a stall", err)
	}
	checkUntouched(t, data)
}

// TestReceiveNoRoom: a source that sends more than the disk can take is
// stopped at the reserve, whatever it estimated, and its copy removed.
func TestReceiveNoRoom(t *testing.T) {
	stream := xbstream(t, 4<<20)
	data := oldDataDir(t)
	msgs := []*pb.BackupChunk{{Info: &pb.BackupInfo{SourceNode: 3, EstimatedBytes: 1 << 10}}} // it lies
	for i := 0; i < len(stream); i += 64 << 10 {
		msgs = append(msgs, &pb.BackupChunk{Data: stream[i:min(len(stream), i+64<<10)]})
	}
	var handed atomic.Int64
	peer := fakePeer(t, msgs, false)
	recv := func() (*pb.BackupChunk, error) {
		c, err := peer()
		if err == nil {
			handed.Add(int64(len(c.Data)))
		}
		return c, err
	}
	// A disk with 2 MiB free, of which the reserve is 1 MiB: the stream
	// fills it as it is received.
	const disk, reserve = 2 << 20, 1 << 20
	var checked atomic.Int64
	free := func(dir string) (int64, error) {
		checked.Add(1)
		return disk - handed.Load(), nil
	}
	_, err, out := receiveWithin(t, recv, Target{DataDir: data, MinFree: reserve, freeSpace: free, checkEvery: 128 << 10})
	if !errors.Is(err, ErrNoRoom) || !strings.Contains(err.Error(), "-min-free-mb") {
		t.Fatalf("err = %v, want ErrNoRoom", err)
	}
	if n := handed.Load(); n > disk-reserve+128<<10+2*64<<10 {
		t.Fatalf("took %d bytes, past the reserve and one check interval", n)
	}
	if checked.Load() < 2 {
		t.Fatalf("the disk was checked %d times", checked.Load())
	}
	checkUntouched(t, data)
	t.Log(err)
	if strings.Contains(out, "warning") {
		t.Fatalf("warned about a small estimate:\n%s", out)
	}
}

// TestReceiveNoRoomAtStart: a disk already in its reserve takes nothing,
// and an estimate past the free space warns.
func TestReceiveNoRoomAtStart(t *testing.T) {
	stream := xbstream(t, 1<<10)
	data := oldDataDir(t)
	info := &pb.BackupChunk{Info: &pb.BackupInfo{SourceNode: 3, EstimatedBytes: 10 << 30}}
	full := func(string) (int64, error) { return 1 << 20, nil }
	_, err, _ := receiveWithin(t, fakePeer(t, []*pb.BackupChunk{info, {Data: stream}}, false), Target{DataDir: data, MinFree: 2 << 20, freeSpace: full})
	if !errors.Is(err, ErrNoRoom) || !strings.Contains(err.Error(), "nothing copied") {
		t.Fatalf("err = %v, want ErrNoRoom before the copy", err)
	}
	checkUntouched(t, data)

	roomy := func(string) (int64, error) { return 4 << 30, nil }
	_, err, out := receiveWithin(t, fakePeer(t, []*pb.BackupChunk{info, {Data: stream}}, false), Target{DataDir: data, MinFree: 1 << 30, freeSpace: roomy, Stall: 100 * time.Millisecond})
	if !errors.Is(err, ErrStalled) {
		t.Fatalf("err = %v, want the stall that ends this stream", err)
	}
	if !strings.Contains(out, "warning: the source estimates ~10.00 GiB, but only 3.00 GiB is free") {
		t.Fatalf("no warning about the estimate:\n%s", out)
	}
	checkUntouched(t, data)
}

// TestReadChunkFlushes: the source sends a partial chunk once the tool
// has been quiet for the flush interval, instead of holding it until a
// whole chunk is there (the receiver's stall bound counts bytes).
func TestReadChunkFlushes(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	buf := make([]byte, 1<<20)
	w.Write([]byte("0123456789"))
	n, err := readChunk(r, buf, 50*time.Millisecond)
	if n != 10 || err != nil {
		t.Fatalf("partial chunk: n=%d err=%v, want 10 bytes and no error", n, err)
	}
	go func() {
		w.Write(make([]byte, 1<<20+5))
		w.Close()
	}()
	if n, err := readChunk(r, buf, time.Minute); n != 1<<20 || err != nil {
		t.Fatalf("full chunk: n=%d err=%v", n, err)
	}
	if n, err := readChunk(r, buf, time.Minute); n != 5 || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("tail: n=%d err=%v", n, err)
	}
}

// TestProgressLineIdle: a copy that receives nothing says so, and when
// it gives up.
func TestProgressLineIdle(t *testing.T) {
	p := &progress{estimated: 100 << 20, start: time.Now().Add(-time.Minute), stall: 5 * time.Minute}
	p.add(1 << 20)
	if got := p.line(time.Now()); strings.Contains(got, "nothing received") {
		t.Fatalf("busy copy: %q", got)
	}
	if got := p.line(time.Now().Add(20 * time.Second)); !strings.Contains(got, "nothing received for 20s (gives up at 5m0s)") {
		t.Fatalf("idle copy: %q", got)
	}
}
