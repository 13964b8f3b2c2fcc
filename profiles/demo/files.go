package demo

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"strings"

	"github.com/agentbridge/agentbridge/shim/sendfile"
)

// chartData is what the demo's bar chart shows: made-up weekly numbers.
var chartData = []struct {
	Label string
	Value int
}{{"Mon", 12}, {"Tue", 19}, {"Wed", 7}, {"Thu", 15}, {"Fri", 22}, {"Sat", 9}, {"Sun", 4}}

// chart sends a PNG bar chart it draws, between two lines of text: the
// file shows where it was sent, after the first and before the second.
func (a *agent) chart(ctx context.Context) error {
	if err := a.stream(ctx, "Here is a bar chart of this week's (made-up) messages per day:\n\n", a.delay); err != nil {
		return err
	}
	if err := a.out.attach(sendfile.NewAttachment("chart.png", "image/png", drawChart())); err != nil {
		return err
	}
	peak := chartData[0]
	for _, d := range chartData {
		if d.Value > peak.Value {
			peak = d
		}
	}
	return a.stream(ctx, fmt.Sprintf("%s was the busiest day, with %d. A real agent sends files the same way, "+
		"with the `send_file` tool the ready profiles offer.\n", peak.Label, peak.Value), a.delay)
}

// notes sends a text file of the session so far, between two lines of
// text.
func (a *agent) notes(ctx context.Context) error {
	if err := a.stream(ctx, "Here are the notes of this session:\n\n", a.delay); err != nil {
		return err
	}
	var b strings.Builder
	b.WriteString("Notes from the agentbridge demo agent\n\n")
	if a.sess.ID == "" {
		b.WriteString("No memory directory is set, so there is nothing to remember.\n")
	} else {
		fmt.Fprintf(&b, "Session %s, turn %d.\n", a.sess.ID, a.sess.Turns+1)
		if a.sess.Name != "" {
			fmt.Fprintf(&b, "Your name: %s\n", a.sess.Name)
		}
		if len(a.sess.History) == 0 {
			b.WriteString("Nothing said before this message.\n")
		}
		for i, h := range a.sess.History {
			fmt.Fprintf(&b, "%d. You said: %s\n", i+1, oneLine(h.User, 200))
		}
	}
	if err := a.out.attach(sendfile.NewAttachment("notes.txt", "text/plain", []byte(b.String()))); err != nil {
		return err
	}
	return a.stream(ctx, "That is `notes.txt`, a plain text file; ask for `draw a chart` to get a picture.\n", a.delay)
}

// drawChart draws chartData as a PNG bar chart, 360×200, a few KB.
func drawChart() []byte {
	const w, h, pad, base = 360, 200, 20, 180
	pal := color.Palette{
		color.RGBA{0xff, 0xff, 0xff, 0xff}, // background
		color.RGBA{0x33, 0x33, 0x33, 0xff}, // axes
		color.RGBA{0x4c, 0x78, 0xa8, 0xff}, // bars
		color.RGBA{0xf5, 0x85, 0x18, 0xff}, // the peak
		color.RGBA{0xdd, 0xdd, 0xdd, 0xff}, // grid
	}
	img := image.NewPaletted(image.Rect(0, 0, w, h), pal)
	fill := func(x0, y0, x1, y1 int, c uint8) {
		for y := y0; y < y1; y++ {
			for x := x0; x < x1; x++ {
				img.SetColorIndex(x, y, c)
			}
		}
	}
	top := 0
	for _, d := range chartData {
		top = max(top, d.Value)
	}
	for v := 5; v <= top; v += 5 { // grid lines every 5
		y := base - v*(base-pad)/top
		fill(pad, y, w-pad, y+1, 4)
	}
	slot := (w - 2*pad) / len(chartData)
	for i, d := range chartData {
		c := uint8(2)
		if d.Value == top {
			c = 3
		}
		x := pad + i*slot + slot/5
		fill(x, base-d.Value*(base-pad)/top, x+slot*3/5, base, c)
	}
	fill(pad, base, w-pad, base+2, 1) // x axis
	fill(pad-2, pad, pad, base+2, 1)  // y axis
	var buf bytes.Buffer
	_ = png.Encode(&buf, img) // writing to memory cannot fail
	return buf.Bytes()
}
