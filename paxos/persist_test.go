package paxos

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"phxgo/wal"
)

// recPipe is a pipeEnv that records what the pipeline does, in order;
// a save becomes durable when the completer waits for it (the latest a
// wal may), or fails if listed in fail.
type recPipe struct {
	events []string
	saves  int
	fail   map[int]bool
	// mark: saveMeta asks for the wal's membership marker.
	mark bool
}

type recSave struct {
	p *recPipe
	k int
}

func (v recSave) wait() error {
	if v.p.fail[v.k] {
		v.p.log("failed %d", v.k)
		return errors.New("disk gone")
	}
	v.p.log("durable %d", v.k)
	return nil
}

func (p *recPipe) log(f string, a ...any) { p.events = append(p.events, fmt.Sprintf(f, a...)) }
func (p *recPipe) failed() bool           { return false }
func (p *recPipe) saveMeta(b []byte) (bool, error) {
	p.log("meta %s", b)
	return p.mark, nil
}
func (p *recPipe) advance(last uint64) { p.log("advance %d", last) }
func (p *recPipe) submit(u wal.Update) pendingSave {
	switch {
	case u.MarkMembership && u.NoSync:
		p.log("submit %d +mark nosync", p.saves)
	case u.MarkMembership:
		p.log("submit %d +mark", p.saves)
	default:
		p.log("submit %d", p.saves)
	}
	p.saves++
	return recSave{p, p.saves - 1}
}
func (p *recPipe) installSnapshot(in *InstalledSnapshot) error {
	p.log("install %d", in.Index)
	return nil
}
func (p *recPipe) apply(it applyItem) {
	if it.install != nil {
		p.log("restore %d", it.install.Index)
	}
	for _, e := range it.entries {
		p.log("apply %d", e.Index)
	}
}
func (p *recPipe) send(ms []Message) {
	for _, m := range ms {
		p.log("send %s", m.Type)
	}
}

// TestPipelinePersistsBeforeSend pins down persist.go's ordering on
// hand-made Readys: messages leave only after their Ready's save (and
// every earlier one) is durable; a committed entry is applied only after
// the save holding its accept is durable, and not later than needed
// (entries durable in earlier saves are applied while this one syncs);
// a failed save sends and applies nothing that depends on it; an
// install goes to storage after the earlier saves were submitted and is
// restored before what follows it.
func TestPipelinePersistsBeforeSend(t *testing.T) {
	b := Ballot{Round: 1, Node: 1}
	acc := func(i uint64) wal.Update { return wal.Update{Accepted: []wal.Accepted{{Index: i, Ballot: b}}} }
	vote := Message{Type: MsgAccepted}
	fetch := Message{Type: MsgFetch}
	entry := func(i uint64) []Entry { return []Entry{{Index: i, Ballot: b}} }
	cases := []struct {
		name    string
		batches [][]Ready // each one persistBatch call, all before any completion
		fail    map[int]bool
		mark    bool // saveMeta asks for the membership marker
		want    []string
	}{{
		name:    "one batch: the entry waits for the save with its accept",
		batches: [][]Ready{{{Update: acc(1), Messages: []Message{vote}}, {Committed: entry(1), Messages: []Message{fetch}}}},
		want:    []string{"submit 0", "durable 0", "apply 1", "send Accepted", "send Fetch", "advance 1"},
	}, {
		name: "two saves in flight: the entry accepted in the first is applied while the second syncs",
		batches: [][]Ready{
			{{Update: acc(1), Messages: []Message{vote}}},
			{{Update: acc(2), Committed: entry(1), Messages: []Message{fetch}}},
		},
		want: []string{"submit 0", "submit 1", "durable 0", "send Accepted", "apply 1", "durable 1", "send Fetch", "advance 1"},
	}, {
		name:    "chosen index only: applied at once, saved lazily",
		batches: [][]Ready{{{Update: wal.Update{Chosen: 1}, Committed: entry(1)}}},
		want:    []string{"submit 0", "apply 1", "durable 0", "advance 1"},
	}, {
		name:    "failed save: nothing that depends on it",
		batches: [][]Ready{{{Update: acc(1), Messages: []Message{vote}}, {Committed: entry(1)}}},
		fail:    map[int]bool{0: true},
		want:    []string{"submit 0", "failed 0"},
	}, {
		name: "install: its own save, after the earlier ones",
		batches: [][]Ready{{
			{Update: acc(1), Messages: []Message{vote}},
			{Install: &InstalledSnapshot{Index: 5}, Update: acc(6), Meta: []byte("m"), Messages: []Message{fetch}},
		}},
		want: []string{"meta m", "submit 0", "install 5", "submit 1", "durable 0", "send Accepted", "restore 5", "durable 1", "send Fetch"},
	}, {
		// The membership marker rides the save after the history's file,
		// once: no write of its own.
		name:    "membership marker: on the save submitted after the history",
		batches: [][]Ready{{{Update: acc(1), Meta: []byte("m"), Messages: []Message{vote}}, {Update: acc(2)}}, {{Update: acc(3)}}},
		mark:    true,
		want:    []string{"meta m", "submit 0 +mark", "submit 1", "durable 0", "send Accepted", "durable 1"},
	}, {
		name:    "membership marker and an install: on the first save, after the history",
		batches: [][]Ready{{{Update: acc(1), Meta: []byte("m")}, {Install: &InstalledSnapshot{Index: 5}, Update: acc(6)}}},
		mark:    true,
		want:    []string{"meta m", "submit 0 +mark", "install 5", "submit 1", "durable 0", "restore 5", "durable 1"},
	}, {
		name:    "membership marker, nothing else to save: a save of its own without a sync",
		batches: [][]Ready{{{Meta: []byte("m"), Committed: entry(1)}}},
		mark:    true,
		want:    []string{"meta m", "submit 0 +mark nosync", "apply 1", "durable 0", "advance 1"},
	}, {
		name:    "history without a marker to add: nothing else to save, no save",
		batches: [][]Ready{{{Meta: []byte("m"), Committed: entry(1)}}},
		want:    []string{"meta m", "apply 1", "advance 1"},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := &recPipe{fail: tc.fail, mark: tc.mark}
			var jobs []*saveJob
			for _, batch := range tc.batches {
				if err := persistBatch(p, batch, func(j *saveJob) { jobs = append(jobs, j) }); err != nil {
					t.Fatal(err)
				}
			}
			for _, j := range jobs {
				if err := completeSave(p, j); err != nil {
					if !errors.Is(err, ErrStorage) {
						t.Fatalf("save error %v not ErrStorage", err)
					}
					break // the node stops
				}
			}
			if !slices.Equal(p.events, tc.want) {
				t.Fatalf("events\n got %q\nwant %q", p.events, tc.want)
			}
		})
	}
}

// TestApplyAhead: while a save syncs, the completer applies what later
// jobs commit only if no pending save holds its accept, in index order.
func TestApplyAhead(t *testing.T) {
	b := Ballot{Round: 1, Node: 1}
	acc := func(i uint64) Ready {
		return Ready{Update: wal.Update{Accepted: []wal.Accepted{{Index: i, Ballot: b}}}}
	}
	commit := func(i uint64) Ready { return Ready{Committed: []Entry{{Index: i, Ballot: b}}} }
	p := &recPipe{}
	var jobs []*saveJob
	for _, rd := range []Ready{acc(1), acc(2), commit(1), commit(2)} {
		if err := persistBatch(p, []Ready{rd}, func(j *saveJob) { jobs = append(jobs, j) }); err != nil {
			t.Fatal(err)
		}
	}
	// Save 0 (accept 1) pending: entry 1 must wait, and 2 behind it.
	startSave(p, jobs[0])
	applyAhead(p, jobs[0], jobs[1:])
	if err := completeSave(p, jobs[0]); err != nil {
		t.Fatal(err)
	}
	// Save 1 (accept 2) pending: entry 1 is durable now, 2 is not.
	startSave(p, jobs[1])
	applyAhead(p, jobs[1], jobs[2:])
	for _, j := range jobs[1:] {
		if err := completeSave(p, j); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"submit 0", "submit 1", "durable 0", "apply 1", "durable 1", "advance 1", "apply 2", "advance 2"}
	if !slices.Equal(p.events, want) {
		t.Fatalf("events\n got %q\nwant %q", p.events, want)
	}
}
