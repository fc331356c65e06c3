package report

import (
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"math"

	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"

	"phxgo/jepsen/history"
)

// Picture geometry and colours. Fault windows are shaded in FaultShade,
// a colour nothing else uses, so a test can find them.
const (
	Width, Height = 960, 360
	left, right   = 70, 20 // plot area margins, pixels
	top, bottom   = 30, 45
)

var (
	FaultShade    = color.RGBA{255, 222, 205, 255}
	white         = color.RGBA{255, 255, 255, 255}
	axisColour    = color.RGBA{60, 60, 60, 255}
	gridColour    = color.RGBA{232, 232, 232, 255}
	outcomeColour = map[history.Outcome]color.RGBA{
		history.OK:   {40, 90, 200, 255},
		history.Fail: {210, 30, 30, 255},
		history.Info: {230, 150, 0, 255},
	}
)

// canvas is a plot area with a linear x axis in seconds and a y axis that
// is linear or log10.
type canvas struct {
	img    *image.RGBA
	x0, x1 float64 // seconds
	y0, y1 float64 // data units (log10 of them when logY)
	logY   bool
	plot   image.Rectangle
}

func newCanvas(x1, y0, y1 float64, logY bool) *canvas {
	img := image.NewRGBA(image.Rect(0, 0, Width, Height))
	draw.Draw(img, img.Bounds(), image.NewUniform(white), image.Point{}, draw.Src)
	if x1 <= 0 {
		x1 = 1
	}
	c := &canvas{img: img, x0: 0, x1: x1, y0: y0, y1: y1, logY: logY,
		plot: image.Rect(left, top, Width-right, Height-bottom)}
	if logY {
		c.y0, c.y1 = math.Log10(y0), math.Log10(y1)
	}
	return c
}

// X maps seconds to a pixel column.
func (c *canvas) X(t float64) int {
	return c.plot.Min.X + int(math.Round((t-c.x0)/(c.x1-c.x0)*float64(c.plot.Dx()-1)))
}

// Y maps a data value to a pixel row, clamped into the plot area.
func (c *canvas) Y(v float64) int {
	if c.logY {
		v = math.Log10(math.Max(v, math.Pow(10, c.y0)))
	}
	f := (v - c.y0) / (c.y1 - c.y0)
	f = math.Max(0, math.Min(1, f))
	return c.plot.Max.Y - 1 - int(math.Round(f*float64(c.plot.Dy()-1)))
}

// shade fills the fault windows over the full height of the plot area.
func (c *canvas) shade(faults []Fault) {
	for _, f := range faults {
		r := image.Rect(c.X(f.Start), c.plot.Min.Y, c.X(f.Heal)+1, c.plot.Max.Y).Intersect(c.plot)
		draw.Draw(c.img, r, image.NewUniform(FaultShade), image.Point{}, draw.Src)
	}
}

func (c *canvas) fill(r image.Rectangle, col color.RGBA) {
	draw.Draw(c.img, r.Intersect(c.img.Bounds()), image.NewUniform(col), image.Point{}, draw.Src)
}

func (c *canvas) hline(x0, x1, y int, col color.RGBA) { c.fill(image.Rect(x0, y, x1+1, y+1), col) }
func (c *canvas) vline(x, y0, y1 int, col color.RGBA) { c.fill(image.Rect(x, y0, x+1, y1+1), col) }

// dot draws a 3x3 mark.
func (c *canvas) dot(x, y int, col color.RGBA) {
	c.fill(image.Rect(x-1, y-1, x+2, y+2).Intersect(c.plot), col)
}

// line draws a segment (Bresenham), for the throughput curve.
func (c *canvas) line(x0, y0, x1, y1 int, col color.RGBA) {
	dx, dy := abs(x1-x0), -abs(y1-y0)
	sx, sy := sign(x1-x0), sign(y1-y0)
	e := dx + dy
	for {
		if (image.Point{x0, y0}).In(c.plot) {
			c.img.SetRGBA(x0, y0, col)
		}
		if x0 == x1 && y0 == y1 {
			return
		}
		if e2 := 2 * e; e2 >= dy {
			e += dy
			x0 += sx
		} else {
			e += dx
			y0 += sy
		}
	}
}

// text draws s with its left edge at x and baseline at y.
func (c *canvas) text(x, y int, s string, col color.RGBA) {
	d := font.Drawer{Dst: c.img, Src: image.NewUniform(col), Face: basicfont.Face7x13, Dot: fixed.P(x, y)}
	d.DrawString(s)
}

func textWidth(s string) int { return len(s) * basicfont.Face7x13.Advance }

// axes draws the frame, the time ticks and labels, the y ticks given, the
// title and the y label.
func (c *canvas) axes(title, yLabel string, yTicks []float64, yFmt func(float64) string) {
	for _, v := range yTicks {
		y := c.Y(v)
		c.hline(c.plot.Min.X+1, c.plot.Max.X-2, y, gridColour)
		c.hline(c.plot.Min.X-4, c.plot.Min.X, y, axisColour)
		s := yFmt(v)
		c.text(c.plot.Min.X-6-textWidth(s), y+4, s, axisColour)
	}
	step := niceStep(c.x1-c.x0, 10)
	for t := 0.0; t <= c.x1+1e-9; t += step {
		x := c.X(t)
		c.vline(x, c.plot.Max.Y, c.plot.Max.Y+4, axisColour)
		s := trimFloat(t)
		c.text(x-textWidth(s)/2, c.plot.Max.Y+17, s, axisColour)
	}
	c.hline(c.plot.Min.X, c.plot.Max.X-1, c.plot.Max.Y-1, axisColour)
	c.hline(c.plot.Min.X, c.plot.Max.X-1, c.plot.Min.Y, axisColour)
	c.vline(c.plot.Min.X, c.plot.Min.Y, c.plot.Max.Y-1, axisColour)
	c.vline(c.plot.Max.X-1, c.plot.Min.Y, c.plot.Max.Y-1, axisColour)
	c.text(c.plot.Min.X, 18, title, axisColour)
	xl := "time since start (s)"
	c.text(c.plot.Min.X+(c.plot.Dx()-textWidth(xl))/2, Height-8, xl, axisColour)
	c.text(4, 18, yLabel, axisColour)
}

// legend writes coloured names at the top right.
func (c *canvas) legend(items []string, cols []color.RGBA) {
	x := c.plot.Max.X
	for i := len(items) - 1; i >= 0; i-- {
		x -= textWidth(items[i]) + 14
		c.fill(image.Rect(x, 9, x+9, 18), cols[i])
		c.text(x+12, 18, items[i], axisColour)
		x -= 8
	}
}

// niceStep is a 1, 2 or 5 times a power of ten that cuts span into at
// most n steps.
func niceStep(span float64, n int) float64 {
	if span <= 0 {
		return 1
	}
	raw := span / float64(n)
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw {
			return m * p
		}
	}
	return 10 * p
}

func trimFloat(v float64) string {
	if v == math.Trunc(v) {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%g", math.Round(v*100)/100)
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

func sign(v int) int {
	switch {
	case v < 0:
		return -1
	case v > 0:
		return 1
	}
	return 0
}
