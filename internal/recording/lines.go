package recording

import (
	"context"
	"log/slog"
	"time"

	"github.com/herald-events/herald/internal/clock"
)

// The delivery lines at info and above (a failed attempt, a refused
// destination, a dead letter, a drop; see log.go) are bounded per endpoint:
// at most linesPerEndpoint in a linesInterval, counted on the recorder's
// clock from the endpoint's first line; the others are counted, and when
// the interval ends one summary line says how many were left out, by kind.
// An endpoint failing however fast thus writes at most linesPerEndpoint+1
// lines a linesInterval. (docs/monitoring.md#the-log tells operators.)
const (
	linesPerEndpoint = 10
	linesInterval    = time.Minute
)

// lineKind is the kind of a bounded delivery line.
type lineKind int

const (
	lineFailed lineKind = iota
	lineBlocked
	lineDeadLettered
	lineDropped
	lineKinds // how many kinds
)

// lineKindKeys are the summary line's keys, by kind.
var lineKindKeys = [lineKinds]string{"failed_attempts", "blocked", "dead_lettered", "dropped"}

// lineWindow is one endpoint's current interval.
type lineWindow struct {
	ends    time.Time
	written int
	left    [lineKinds]int // lines left out, by kind
}

// lineBudget keeps the endpoints' intervals. It is used on the recorder's
// goroutine only. An interval is forgotten when it ends, so it holds the
// endpoints that wrote a line in the last linesInterval; its timer, armed
// while it holds any, fires at the earliest end (see due and expire).
type lineBudget struct {
	clk     clock.Clock
	log     *slog.Logger
	windows map[string]*lineWindow
	timer   clock.Timer // nil when no interval is open
}

func newLineBudget(clk clock.Clock, log *slog.Logger) *lineBudget {
	return &lineBudget{clk: clk, log: log, windows: map[string]*lineWindow{}}
}

// allow reports whether a line of this kind about the endpoint may be
// written now; when it may not, the line is counted for the summary.
func (b *lineBudget) allow(endpointID string, kind lineKind) bool {
	now := b.clk.Now()
	w := b.windows[endpointID]
	if w != nil && !now.Before(w.ends) {
		b.close(endpointID, w)
		w = nil
	}
	if w == nil {
		w = &lineWindow{ends: now.Add(linesInterval)}
		b.windows[endpointID] = w
		if b.timer == nil {
			b.timer = b.clk.NewTimer(linesInterval)
		}
	}
	if w.written < linesPerEndpoint {
		w.written++
		return true
	}
	w.left[kind]++
	return false
}

// due is the channel of the timer that ends the earliest interval (nil
// when none is open): receive from it, then call expire.
func (b *lineBudget) due() <-chan time.Time {
	if b.timer == nil {
		return nil
	}
	return b.timer.C()
}

// expire closes every interval ended by now, writing their summaries, and
// arms the timer for the next end.
func (b *lineBudget) expire() {
	now := b.clk.Now()
	b.timer = nil
	var next time.Time
	for id, w := range b.windows {
		if !now.Before(w.ends) {
			b.close(id, w)
		} else if next.IsZero() || w.ends.Before(next) {
			next = w.ends
		}
	}
	if !next.IsZero() {
		b.timer = b.clk.NewTimer(next.Sub(now))
	}
}

// stop closes every interval now (at the recorder's end), so that no
// count of lines left out is lost.
func (b *lineBudget) stop() {
	if b.timer != nil {
		b.timer.Stop()
		b.timer = nil
	}
	for id, w := range b.windows {
		b.close(id, w)
	}
}

// close forgets an endpoint's interval, writing its summary if lines were
// left out.
func (b *lineBudget) close(endpointID string, w *lineWindow) {
	delete(b.windows, endpointID)
	total := 0
	attrs := []slog.Attr{slog.String("endpoint_id", endpointID)}
	for k, n := range w.left {
		total += n
		if n > 0 {
			attrs = append(attrs, slog.Int(lineKindKeys[k], n))
		}
	}
	if total == 0 {
		return
	}
	attrs = append(attrs, slog.Int("more", total), slog.Int("logged", w.written), slog.Duration("interval", linesInterval))
	b.log.LogAttrs(context.Background(), slog.LevelWarn, "… and more delivery lines for this endpoint, not logged", attrs...)
}
