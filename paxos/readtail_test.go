package paxos

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"
)

func tailCmds(index uint64, data ...string) []command {
	var cs []command
	for _, d := range data {
		cs = append(cs, command{Node: 1, Seq: index, Data: []byte(d)})
	}
	return cs
}

func cmdStrings(cs []Command) []string {
	var out []string
	for _, c := range cs {
		out = append(out, fmt.Sprintf("%d:%s", c.Index, c.Data))
	}
	return out
}

// The tail holds the newest entries within its byte bound, answers only
// from its first index on, and starts afresh after a gap.
func TestReadTailBounds(t *testing.T) {
	tl := newReadTail(300)
	for i := uint64(1); i <= 10; i++ {
		cs := tailCmds(i, fmt.Sprint("a", i))
		if i == 4 {
			cs = append(cs, command{Flags: flagBarrier}) // internal: not returned
		}
		tl.add(i, cs, 100)
	}
	// 300 bytes of 100-byte values: 8, 9, 10.
	if _, _, ok := tl.read(7, 10, 1<<20); ok {
		t.Fatal("index 7 was evicted, but the tail answered")
	}
	got, next, ok := tl.read(8, 10, 1<<20)
	if !ok || next != 11 || !slices.Equal(cmdStrings(got), []string{"8:a8", "9:a9", "10:a10"}) {
		t.Fatalf("read(8): %v next %d ok %v", cmdStrings(got), next, ok)
	}
	// upto (the applied index) and maxBytes cut the read; one entry at least.
	if got, next, _ = tl.read(8, 9, 1<<20); next != 10 || len(got) != 2 {
		t.Fatalf("read(8, upto 9): %v next %d", cmdStrings(got), next)
	}
	if got, next, _ = tl.read(9, 10, 1); next != 10 || len(got) != 1 {
		t.Fatalf("read(9, 1 byte): %v next %d", cmdStrings(got), next)
	}
	if _, _, ok := tl.read(11, 11, 1<<20); ok {
		t.Fatal("index 11 is not applied, but the tail answered")
	}
	// A gap (a snapshot install) drops everything before it.
	tl.add(20, tailCmds(20, "b"), 100)
	if _, _, ok := tl.read(10, 20, 1<<20); ok {
		t.Fatal("the tail answered across a gap")
	}
	if got, next, ok = tl.read(20, 20, 1<<20); !ok || next != 21 || len(got) != 1 {
		t.Fatalf("read(20) after the gap: %v next %d ok %v", cmdStrings(got), next, ok)
	}
	// An entry larger than the bound is still kept (alone).
	tl.add(21, tailCmds(21, "big"), 1000)
	if got, _, ok = tl.read(21, 21, 1<<20); !ok || len(got) != 1 {
		t.Fatalf("oversized newest entry: %v ok %v", cmdStrings(got), ok)
	}
	if _, _, ok := tl.read(20, 21, 1<<20); ok {
		t.Fatal("index 20 should have made room for 21")
	}
}

// A node serves readers near the head of its log from the tail and readers
// behind it from storage, with the same commands either way: a reader
// that starts at the log's beginning crosses from storage into the tail,
// and one that reconnects in the middle of the tail is served from memory.
func TestReadNextTailAndStorage(t *testing.T) {
	cfg := testConfig(1, map[uint32]string{1: "127.0.0.1:1"}, t.TempDir())
	cfg.ReadTailBytes = 8 << 10 // about 7 of the 1 KiB commands below
	n, err := Start(cfg, &lockedSM{})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var want []string
	for i := range 40 {
		cmd := fmt.Sprintf("%04d-%01020d", i, 0)
		if _, err := propose(ctx, n, cmd); err != nil {
			t.Fatal(err)
		}
		want = append(want, cmd)
	}
	applied := n.Applied()
	tl := n.tail
	tl.mu.RLock()
	first := tl.ents[tl.head].index
	tl.mu.RUnlock()
	if first <= 2 || first > applied {
		t.Fatalf("tail starts at %d of %d applied: want it to hold only the newest entries", first, applied)
	}

	// readAll follows the log from `from` to Applied in small chunks, as
	// a replica's cursor does, and counts where each read was served.
	readAll := func(from uint64) (cmds []string, tail, store uint64) {
		st0 := n.Status()
		for from <= applied {
			cs, next, err := n.ReadNext(from, 2<<10)
			if err != nil {
				t.Fatalf("ReadNext(%d): %v", from, err)
			}
			if next <= from {
				t.Fatalf("ReadNext(%d) did not advance", from)
			}
			for _, c := range cs {
				cmds = append(cmds, string(c.Data))
			}
			from = next
		}
		st1 := n.Status()
		return cmds, st1.TailReads - st0.TailReads, st1.StorageReads - st0.StorageReads
	}

	// From the beginning: storage, then the tail; every command once, in order.
	got, tail, store := readAll(1)
	if !slices.Equal(got, want) {
		t.Fatalf("read from 1: %d commands, want %d (first %q)", len(got), len(want), got[:min(1, len(got))])
	}
	if store == 0 || tail == 0 {
		t.Fatalf("read from 1: %d storage reads, %d tail reads; want both", store, tail)
	}

	// The boundary: from the tail's first index, memory only; from the
	// index before it, storage (which reads on into the tail's range).
	got, tail, store = readAll(first)
	if store != 0 || tail == 0 {
		t.Fatalf("read from the tail's first index %d: %d storage reads, %d tail reads", first, store, tail)
	}
	if wantTail := want[len(want)-int(applied-first+1):]; !slices.Equal(got, wantTail) {
		t.Fatalf("read from %d: %d commands, want %d", first, len(got), len(wantTail))
	}
	if _, _, store = readAll(first - 1); store == 0 {
		t.Fatalf("read from %d (behind the tail): no storage read", first-1)
	}

	// A replica that reconnects mid-tail: memory only, and what it gets
	// matches what storage holds for the same range.
	mid := first + (applied-first)/2
	got, tail, store = readAll(mid)
	if store != 0 || tail == 0 {
		t.Fatalf("reconnect at %d (tail %d..%d): %d storage reads, %d tail reads", mid, first, applied, store, tail)
	}
	as, err := n.storage.Range(mid, applied, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	var fromStore []string
	for _, a := range as {
		cs, err := decodeValue(a.Value)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cs {
			if !c.internal() {
				fromStore = append(fromStore, string(c.Data))
			}
		}
	}
	if !slices.Equal(got, fromStore) {
		t.Fatalf("tail and storage disagree from %d: %d vs %d commands", mid, len(got), len(fromStore))
	}

	// Below the log's first index the answer is ErrCompacted, even where
	// the tail still holds the entry.
	if at, err := n.Compact(ctx, applied+1); err != nil || at != applied+1 {
		t.Fatalf("compact to %d: first index %d, %v", applied+1, at, err)
	}
	if _, _, err := n.ReadNext(mid, 1<<20); !errors.Is(err, ErrCompacted) {
		t.Fatalf("read at %d below the compaction point: %v, want ErrCompacted", mid, err)
	}
}
