package report

import (
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"phxgo/jepsen/checker"
	"phxgo/jepsen/history"
)

// knownHistory is 20 s of one op every 100 ms (ok, with a fail and an
// info among them) and two fault windows, 5–8 s and 12–14 s.
func knownHistory() []history.Op {
	sec := func(s float64) int64 { return int64(s * float64(time.Second)) }
	var ops []history.Op
	for i := 0; i < 200; i++ {
		t := float64(i) / 10
		op := history.Op{Process: i % 4, F: history.FWrite, Outcome: history.OK, Invoke: sec(t), Complete: sec(t + 0.005)}
		switch i {
		case 60:
			op.Outcome, op.Error = history.Fail, "duplicate key"
		case 125:
			op.Outcome, op.Complete = history.Info, sec(t+1.5)
		}
		ops = append(ops, op)
	}
	ops = append(ops,
		history.Op{Process: history.NemesisProcess, F: history.FNemesis, Note: "kill n1", Outcome: history.OK, Invoke: sec(5), Complete: sec(8)},
		history.Op{Process: history.NemesisProcess, F: history.FNemesis, Note: "partition [n2] | [n1 n3]", Outcome: history.OK, Invoke: sec(12), Complete: sec(14)})
	return ops
}

func TestWriteDrawsFaultWindowsAndVerdicts(t *testing.T) {
	dir := t.TempDir()
	run := Run{Title: "register under kill,partition", Line: "valid=false ops=200 ok=198 fail=1 info=1",
		Checks: []checker.Result{
			{Checker: "linearizable", Valid: checker.Invalid, Anomalies: []checker.Anomaly{{Kind: "nonlinearizable", Key: 3, Detail: "read 7 after write 8"}}},
			{Checker: "availability", Valid: checker.Valid, Info: map[string]any{"quiet-avail": 0.99,
				"windows": []checker.Window{{Fault: "kill n1", Start: 5, Heal: 8, Ops: 30, OK: 15, Avail: 0.5, OutageSeconds: 2.5, RecoverySeconds: 0.25}}}},
		}}
	if err := Write(dir, knownHistory(), run); err != nil {
		t.Fatal(err)
	}
	s := build(knownHistory())
	for _, name := range []string{LatencyPNG, ThroughputPNG} {
		img := decode(t, filepath.Join(dir, name))
		if b := img.Bounds(); b.Dx() != Width || b.Dy() != Height {
			t.Fatalf("%s: %v, want %dx%d", name, b, Width, Height)
		}
		// The same axis mapping the picture used.
		c := newCanvas(s.end, 1, 10, false)
		inside := func(x int) bool {
			for _, f := range s.faults {
				if x >= c.X(f.Start) && x <= c.X(f.Heal) {
					return true
				}
			}
			return false
		}
		shadedIn := map[int]bool{}
		for x := c.plot.Min.X; x < c.plot.Max.X; x++ {
			for y := c.plot.Min.Y; y < c.plot.Max.Y; y++ {
				if !same(img.At(x, y), FaultShade) {
					continue
				}
				if !inside(x) {
					t.Fatalf("%s: fault shade at (%d,%d), t=%.2fs, outside every fault window", name, x, y, s.end*float64(x-c.plot.Min.X)/float64(c.plot.Dx()-1))
				}
				shadedIn[x] = true
			}
		}
		for _, f := range s.faults {
			for _, tm := range []float64{f.Start + 0.1, (f.Start + f.Heal) / 2, f.Heal - 0.1} {
				if !shadedIn[c.X(tm)] {
					t.Errorf("%s: no shade at t=%.1fs inside fault %q", name, tm, f.Note)
				}
			}
		}
		// Marks were drawn: some pixel in the plot is the ok colour.
		if !hasColour(img, c.plot, outcomeColour[history.OK]) {
			t.Errorf("%s: no ok marks", name)
		}
	}
	lat := decode(t, filepath.Join(dir, LatencyPNG))
	c := newCanvas(s.end, 1, 10, false)
	for _, o := range []history.Outcome{history.Fail, history.Info} {
		if !hasColour(lat, c.plot, outcomeColour[o]) {
			t.Errorf("latency: no %s mark", o)
		}
	}

	b, err := os.ReadFile(filepath.Join(dir, IndexHTML))
	if err != nil {
		t.Fatal(err)
	}
	html := string(b)
	for _, want := range []string{
		`<img src="latency.png"`, `<img src="throughput.png"`, `href="results.json"`,
		"valid=false ops=200", "linearizable", `class="v-false"`, "read 7 after write 8", "availability", `class="v-true"`,
		"kill n1", "partition [n2] | [n1 n3]", "<td>5.0</td><td>8.0</td><td>3.0</td>",
		"<td>kill n1</td><td>30</td><td>50%</td><td>2.5</td><td>0.25</td>",
	} {
		if !strings.Contains(html, want) {
			t.Errorf("index.html lacks %q", want)
		}
	}
}

// TestUnhealedFaultShadedToEnd: a fault the run never healed (Complete 0)
// is shaded up to the last operation.
func TestUnhealedFaultShadedToEnd(t *testing.T) {
	ops := knownHistory()
	ops = append(ops, history.Op{Process: history.NemesisProcess, F: history.FNemesis, Note: "pause n2", Outcome: history.Info, Invoke: int64(17 * time.Second)})
	s := build(ops)
	f := s.faults[len(s.faults)-1]
	if f.Note != "pause n2" || f.Heal != s.end {
		t.Fatalf("last fault %+v, want pause n2 healed at the end %.2f", f, s.end)
	}
}

func TestWriteNeedsDir(t *testing.T) {
	if err := Write("", nil, Run{}); err != ErrNoDir {
		t.Fatalf("err %v, want ErrNoDir", err)
	}
}

// An empty history still gives valid pictures (a run that failed early).
func TestEmptyHistory(t *testing.T) {
	dir := t.TempDir()
	if err := Write(dir, nil, Run{Title: "empty"}); err != nil {
		t.Fatal(err)
	}
	decode(t, filepath.Join(dir, LatencyPNG))
	decode(t, filepath.Join(dir, ThroughputPNG))
}

func decode(t *testing.T, path string) image.Image {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return img
}

// same compares colours by value, whatever type the decoder returned.
func same(a, b color.Color) bool {
	ar, ag, ab, aa := a.RGBA()
	br, bg, bb, ba := b.RGBA()
	return ar == br && ag == bg && ab == bb && aa == ba
}

func hasColour(img image.Image, r image.Rectangle, col color.Color) bool {
	for x := r.Min.X; x < r.Max.X; x++ {
		for y := r.Min.Y; y < r.Max.Y; y++ {
			if same(img.At(x, y), col) {
				return true
			}
		}
	}
	return false
}
