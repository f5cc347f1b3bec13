package console

import (
	"fmt"
	"html"
	"html/template"
	"math"
	"strings"
	"time"

	"github.com/herald-events/herald/internal/stats"
)

// Charts are inline SVG drawn here, on the server: no script runs in the
// page (the Content-Security-Policy allows none inline), and html/template
// takes the drawing as template.HTML because every number in it is
// formatted here and every text is escaped (html.EscapeString).

// A chart's geometry, in SVG user units: the plot area inside the
// margins, and the legend (up to chartMaxLines entries) below it.
const (
	chartW, chartH        = 640, 180
	chartLeft, chartRight = 56, 12
	chartTop, chartBottom = 12, 28
	plotW                 = chartW - chartLeft - chartRight
	plotH                 = chartH - chartTop - chartBottom
	chartMaxLines         = 3
	legendGap, legendY    = 200, chartH - 2
	legendSwatch          = 14
)

// line is one series of a chart: its name, colour and a value per step
// (NaN: no value, a gap).
type line struct {
	name, color string
	values      []float64
}

// chart draws lines over the steps of a series that starts at from, each
// step long, as a figure's caption (title) and an SVG line chart titled title whose y axis is in unit,
// from 0 to top (0: niceCeil of the largest value). id names the svg
// element (for the page's tests and links).
func chart(id, title, unit string, top float64, from time.Time, step time.Duration, lines ...line) template.HTML {
	largest := 0.0
	n := 0
	for _, l := range lines {
		n = max(n, len(l.values))
		for _, v := range l.values {
			if !math.IsNaN(v) {
				largest = math.Max(largest, v)
			}
		}
	}
	if top == 0 {
		top = niceCeil(largest)
	}
	var b strings.Builder
	// The title shows above the chart (the figure's caption) and is the
	// image's name for a screen reader.
	fmt.Fprintf(&b, `<figcaption id="%s-title">%s</figcaption>`, html.EscapeString(id), html.EscapeString(title))
	fmt.Fprintf(&b, `<svg id="%s" class="chart" role="img" aria-labelledby="%s-title" viewBox="0 0 %d %d" width="%d" height="%d" xmlns="http://www.w3.org/2000/svg">`,
		html.EscapeString(id), html.EscapeString(id), chartW, chartH, chartW, chartH)
	fmt.Fprintf(&b, `<title>%s</title>`, html.EscapeString(title))
	axes(&b, top, unit, from, step, n)
	for i, l := range lines[:min(len(lines), chartMaxLines)] {
		polyline(&b, l, top, n)
		x := chartLeft + i*legendGap
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="3" fill="%s"/><text x="%d" y="%d" class="legend">%s</text>`,
			x, legendY-4, legendSwatch, l.color, x+legendSwatch+4, legendY, html.EscapeString(l.name))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String()) //nolint:gosec // built from numbers and escaped text above
}

// axes draws the plot's frame, the y axis's top and zero, and the x
// axis's first and last step times (UTC).
func axes(b *strings.Builder, top float64, unit string, from time.Time, step time.Duration, n int) {
	fmt.Fprintf(b, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#ccd" />`, chartLeft, chartTop, plotW, plotH)
	fmt.Fprintf(b, `<text x="%d" y="%d" text-anchor="end" class="axis">%s %s</text>`, chartLeft-4, chartTop+10, number(top), html.EscapeString(unit))
	fmt.Fprintf(b, `<text x="%d" y="%d" text-anchor="end" class="axis">0</text>`, chartLeft-4, chartTop+plotH)
	last := from.Add(time.Duration(max(n-1, 0)) * step)
	fmt.Fprintf(b, `<text x="%d" y="%d" class="axis">%s</text>`, chartLeft, chartTop+plotH+14, from.UTC().Format("Jan 2 15:04"))
	fmt.Fprintf(b, `<text x="%d" y="%d" text-anchor="end" class="axis">%s UTC</text>`, chartLeft+plotW, chartTop+plotH+14, last.UTC().Format("Jan 2 15:04"))
}

// polyline draws l's values, a polyline per run without a gap (a dot for
// a run of one).
func polyline(b *strings.Builder, l line, top float64, n int) {
	var pts []string
	var lastX, lastY float64
	flush := func() {
		switch {
		case len(pts) == 1:
			fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="2" fill="%s"/>`, lastX, lastY, l.color)
		case len(pts) > 1:
			fmt.Fprintf(b, `<polyline fill="none" stroke="%s" stroke-width="1.5" points="%s"/>`, l.color, strings.Join(pts, " "))
		}
		pts = pts[:0]
	}
	for i, v := range l.values {
		if math.IsNaN(v) {
			flush()
			continue
		}
		lastX = chartLeft + float64(plotW)*float64(i)/float64(max(n-1, 1))
		lastY = chartTop + float64(plotH)*(1-v/top)
		pts = append(pts, fmt.Sprintf("%.1f,%.1f", lastX, lastY))
	}
	flush()
}

// niceCeil is the y axis's top for a largest value v: 1, 2 or 5 times a
// power of ten, at least v (1 when v is 0).
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

// number writes v without trailing zeros.
func number(v float64) string { return strings.TrimSuffix(fmt.Sprintf("%.6g", v), ".0") }

// The overview's charts of a series (stats.Row per step).

// deliveriesChart draws deliveries per second: each step's counts over
// its length (the mean rate over the step).
func deliveriesChart(id string, rows []stats.Row, step time.Duration) template.HTML {
	var d, f, x []float64
	per := step.Seconds()
	for _, r := range rows {
		d, f, x = append(d, float64(r.Delivered)/per), append(f, float64(r.Failed)/per), append(x, float64(r.DeadLettered)/per)
	}
	return chart(id, "Deliveries per second (mean over each "+stepWords(step)+")", "/s", 0, firstAt(rows), step,
		line{"delivered", "#2a8a4a", d}, line{"failed attempts", "#d08a00", f}, line{"dead-lettered", "#c03030", x})
}

// successChart draws the share of attempts and acknowledgements that
// delivered: delivered / (delivered + failed), none for a step without
// either, on an axis from 0 to 100 %.
func successChart(id string, rows []stats.Row, step time.Duration) template.HTML {
	var v []float64
	for _, r := range rows {
		if all := r.Delivered + r.Failed; all > 0 {
			v = append(v, 100*float64(r.Delivered)/float64(all))
		} else {
			v = append(v, math.NaN())
		}
	}
	return chart(id, "Success rate", "%", 100, firstAt(rows), step, line{"delivered / (delivered + failed)", "#2a8a4a", v})
}

func latencyChart(id string, rows []stats.Row, step time.Duration) template.HTML {
	var p50, p99 []float64
	for i := range rows {
		a, b := rows[i].Percentile(0.5), rows[i].Percentile(0.99)
		if a == 0 {
			a, b = math.NaN(), math.NaN()
		}
		p50, p99 = append(p50, a), append(p99, b)
	}
	return chart(id, "Attempt latency", "ms", 0, firstAt(rows), step, line{"p50", "#3060c0", p50}, line{"p99", "#8040a0", p99})
}

func firstAt(rows []stats.Row) time.Time {
	if len(rows) == 0 {
		return time.Time{}
	}
	return rows[0].At
}

// stepWords is a step in words: "minute", "5 minutes", "hour".
func stepWords(step time.Duration) string {
	switch {
	case step == time.Minute:
		return "minute"
	case step == time.Hour:
		return "hour"
	}
	return fmt.Sprintf("%d minutes", int(step/time.Minute))
}
