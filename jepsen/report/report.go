package report

import (
	"errors"
	"fmt"
	"image"
	"image/png"
	"os"
	"path/filepath"

	"phxgo/jepsen/checker"
	"phxgo/jepsen/history"
)

// Files written into the run's directory.
const (
	LatencyPNG    = "latency.png"
	ThroughputPNG = "throughput.png"
	IndexHTML     = "index.html"
)

// Run is what a report shows besides the history.
type Run struct {
	Title  string           // e.g. "register under kill,partition, seed 1"
	Line   string           // the run's last line, valid=… ops=…
	Checks []checker.Result // the checkers' verdicts
}

// ErrNoDir is returned for an empty output directory.
var ErrNoDir = errors.New("report: no output directory")

// Write draws the pictures of ops and the HTML page linking them into dir.
// A failure leaves whatever files were written; the run's verdict does not
// depend on the report.
func Write(dir string, ops []history.Op, run Run) error {
	if dir == "" {
		return ErrNoDir
	}
	s := build(ops)
	if err := writePNG(filepath.Join(dir, LatencyPNG), latencyPicture(s)); err != nil {
		return err
	}
	if err := writePNG(filepath.Join(dir, ThroughputPNG), throughputPicture(s)); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(dir, IndexHTML))
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	werr := writePage(f, pageData{Title: run.Title, Line: run.Line, Checks: run.Checks, Faults: s.faults})
	if err := errors.Join(werr, f.Close()); err != nil {
		return fmt.Errorf("report: %s: %w", IndexHTML, err)
	}
	return nil
}

func writePNG(path string, img image.Image) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	if err := errors.Join(png.Encode(f, img), f.Close()); err != nil {
		return fmt.Errorf("report: %s: %w", filepath.Base(path), err)
	}
	return nil
}
