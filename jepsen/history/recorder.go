package history

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// Recorder collects completed Ops from many goroutines and optionally
// streams each one as a JSON line.
type Recorder struct {
	start time.Time

	mu   sync.Mutex
	ops  []Op
	w    *bufio.Writer
	werr error
}

// NewRecorder returns a Recorder whose clock starts now. w may be nil.
func NewRecorder(w io.Writer) *Recorder {
	r := &Recorder{start: time.Now()}
	if w != nil {
		r.w = bufio.NewWriter(w)
	}
	return r
}

// Now is the recorder's clock: nanoseconds since it was created (monotonic).
func (r *Recorder) Now() int64 { return int64(time.Since(r.start)) }

// Add records a completed Op, assigning its Index.
func (r *Recorder) Add(op Op) Op {
	r.mu.Lock()
	defer r.mu.Unlock()
	op.Index = len(r.ops)
	r.ops = append(r.ops, op)
	if r.w != nil && r.werr == nil {
		b, err := json.Marshal(op)
		if err == nil {
			b = append(b, '\n')
			_, err = r.w.Write(b)
		}
		if err == nil {
			err = r.w.Flush()
		}
		r.werr = err
	}
	return op
}

// Ops returns a copy of the history so far, in completion order.
func (r *Recorder) Ops() []Op {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Op(nil), r.ops...)
}

// Err reports the first error writing the stream, if any.
func (r *Recorder) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.werr
}

// WriteFile writes ops as JSON lines to path.
func WriteFile(path string, ops []Op) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	for _, op := range ops {
		if err := enc.Encode(op); err != nil {
			f.Close()
			return err
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// ReadFile reads a JSON-lines history written by WriteFile or a Recorder.
func ReadFile(path string) ([]Op, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var ops []Op
	dec := json.NewDecoder(f)
	for {
		var op Op
		if err := dec.Decode(&op); err == io.EOF {
			return ops, nil
		} else if err != nil {
			return nil, fmt.Errorf("history %s: op %d: %w", path, len(ops), err)
		}
		ops = append(ops, op)
	}
}
