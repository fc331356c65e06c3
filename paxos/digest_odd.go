package paxos

import (
	"bufio"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Odd marks. A divergence is seen only while the range is among the
// newest a node sends (digestsSent) and its peer remembers: after a
// restart of the nodes, an old fork would look healthy again. So a node
// that the majority of the digests it knows names as the odd one records
// that, durably, in Dir/logdigests-odd, one line per range:
//
//	first last ours-hex majority-hex unix-nano
//
// and reports it in Status.OddRanges from then on, across restarts, until
// its directory is replaced (the remedy: remove the node from the
// membership and add it back with an empty directory). Only the odd node
// keeps a mark: a majority against it is the evidence, which one stolen
// key cannot forge (each digest is its sender's word about itself), and
// the healthy nodes must not keep reporting a peer that was replaced.

const oddFileName = "logdigests-odd"

// OddRange is a range where the majority of the digests a node knew
// disagreed with its own: its log holds a value there that was not
// chosen.
type OddRange struct {
	First, Last    uint64
	Ours, Majority [32]byte
	At             time.Time
}

// oddMarks is the node's set of marks and their file.
type oddMarks struct {
	mu    sync.Mutex
	path  string // "": in memory only
	marks []OddRange
}

func loadOddMarks(dir string) (*oddMarks, error) {
	o := &oddMarks{}
	if dir == "" {
		return o, nil
	}
	o.path = filepath.Join(dir, oddFileName)
	b, err := os.ReadFile(o.path)
	if errors.Is(err, fs.ErrNotExist) {
		return o, nil
	}
	if err != nil {
		return o, err
	}
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		if r, ok := parseOddLine(sc.Text()); ok {
			o.marks = append(o.marks, r)
		}
	}
	return o, nil
}

func parseOddLine(line string) (OddRange, bool) {
	f := strings.Fields(line)
	if len(f) != 5 {
		return OddRange{}, false
	}
	var r OddRange
	var err1, err2, err3 error
	r.First, err1 = strconv.ParseUint(f[0], 10, 64)
	r.Last, err2 = strconv.ParseUint(f[1], 10, 64)
	ns, err3 := strconv.ParseInt(f[4], 10, 64)
	ours, err4 := hex.DecodeString(f[2])
	maj, err5 := hex.DecodeString(f[3])
	if errors.Join(err1, err2, err3, err4, err5) != nil || len(ours) != 32 || len(maj) != 32 || r.First == 0 || r.Last < r.First {
		return OddRange{}, false
	}
	copy(r.Ours[:], ours)
	copy(r.Majority[:], maj)
	r.At = time.Unix(0, ns)
	return r, true
}

// add records r unless a mark of its range exists; it returns whether r
// is new. The line is synced before add returns.
func (o *oddMarks) add(r OddRange) (bool, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, m := range o.marks {
		if m.First == r.First {
			return false, nil
		}
	}
	o.marks = append(o.marks, r)
	if o.path == "" {
		return true, nil
	}
	f, err := os.OpenFile(o.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return true, err
	}
	_, err = fmt.Fprintf(f, "%d %d %x %x %d\n", r.First, r.Last, r.Ours[:], r.Majority[:], r.At.UnixNano())
	if err == nil {
		err = f.Sync()
	}
	return true, errors.Join(err, f.Close())
}

// any reports whether the node holds a mark.
func (o *oddMarks) any() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.marks) > 0
}

func (o *oddMarks) list() []OddRange {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]OddRange(nil), o.marks...)
}

// oddNow returns the divergences in which the majority of the digests
// known names this node as the odd one.
func (b *digestBook) oddNow() []Divergence {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []Divergence
	for i := range b.divs {
		d := b.divs[i]
		b.count(&d)
		if d.Odd() == b.self {
			out = append(out, d)
		}
	}
	return out
}
