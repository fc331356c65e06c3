package report

import (
	"fmt"
	"image"
	"image/color"
	"math"

	"phxgo/jepsen/history"
)

// latencyPicture plots every client operation at (invoke time, latency)
// on a log scale, coloured by outcome, over the shaded fault windows. Info
// ops that timed out sit on a horizontal line at the op timeout.
func latencyPicture(s series) *image.RGBA {
	lo, hi := math.Inf(1), 0.0
	for _, p := range s.points {
		lo, hi = math.Min(lo, p.latency), math.Max(hi, p.latency)
	}
	if hi == 0 {
		lo, hi = 1, 10
	}
	lo = math.Pow(10, math.Floor(math.Log10(math.Max(lo, 0.1))))
	hi = math.Pow(10, math.Ceil(math.Log10(math.Max(hi, lo*10))))
	c := newCanvas(s.end, lo, hi, true)
	c.shade(s.faults)
	var ticks []float64
	for v := lo; v <= hi*1.001; v *= 10 {
		ticks = append(ticks, v)
	}
	c.axes("latency of each operation by invoke time (shaded: faults)", "ms", ticks, trimFloat)
	// ok first so the rarer fail and info marks stay visible on top.
	for _, o := range []history.Outcome{history.OK, history.Info, history.Fail} {
		for _, p := range s.points {
			if p.outcome == o {
				c.dot(c.X(p.t), c.Y(p.latency), outcomeColour[o])
			}
		}
	}
	c.legend([]string{"ok", "fail", "info", "fault"},
		[]color.RGBA{outcomeColour[history.OK], outcomeColour[history.Fail], outcomeColour[history.Info], FaultShade})
	return c.img
}

// throughputPicture plots ok completions per second, one value per
// bucket, over the shaded fault windows.
func throughputPicture(s series) *image.RGBA {
	peak := 0.0
	for _, n := range s.okPerBucket {
		peak = math.Max(peak, float64(n)/s.bucket)
	}
	top := math.Max(1, peak*1.1)
	step := niceStep(top, 6)
	top = math.Ceil(top/step) * step
	c := newCanvas(s.end, 0, top, false)
	c.shade(s.faults)
	var ticks []float64
	for v := 0.0; v <= top+1e-9; v += step {
		ticks = append(ticks, v)
	}
	title := "ok operations per second (shaded: faults)"
	if s.bucket > 1 {
		title = fmt.Sprintf("ok operations per second, %gs buckets (shaded: faults)", s.bucket)
	}
	c.axes(title, "ok/s", ticks, trimFloat)
	col := outcomeColour[history.OK]
	px, py := -1, -1
	for i, n := range s.okPerBucket {
		x, y := c.X((float64(i)+0.5)*s.bucket), c.Y(float64(n)/s.bucket)
		if px >= 0 {
			c.line(px, py, x, y, col)
			c.line(px, py+1, x, y+1, col) // two pixels thick
		}
		c.dot(x, y, col)
		px, py = x, y
	}
	c.legend([]string{"ok/s", "fault"}, []color.RGBA{col, FaultShade})
	return c.img
}
