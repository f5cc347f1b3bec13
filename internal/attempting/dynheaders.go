package attempting

import (
	"context"
	"log/slog"

	"github.com/herald-events/herald/internal/catalog"
	"github.com/herald-events/herald/internal/filter"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/subscription"
)

// setDynamicHeaders sets on h sub's dynamic headers, their values taken
// from the events of cs (subscription.DynamicHeader.Value): a single
// delivery's header carries its event's value; a batch's carries the value
// every event of the batch gives it, and is left out when one event gives
// it none or a different one (a header describes the whole request). Each
// event is parsed at most once, only when the subscription has dynamic
// headers, and only as far as the keys need. A header left out for a
// reason other than a missing key (or a batch's disagreement) is logged at
// debug with the reason, never the value.
func (a *Attempter) setDynamicHeaders(h *headerBuilder, sub *catalog.Entry, cs []store.Claimed) {
	if len(sub.DynamicHeaders) == 0 {
		return
	}
	evs := make([]*filter.Event, len(cs))
	for i := range cs {
		evs[i] = filter.NewEvent(cs[i].Payload)
	}
	for _, d := range sub.DynamicHeaders {
		v, ok := a.dynamicValue(sub, d, evs)
		if ok {
			h.set(d.Name, v)
		}
	}
}

// dynamicValue is d's value in every event of evs, and whether they all
// give it the same one.
func (a *Attempter) dynamicValue(sub *catalog.Entry, d subscription.DynamicHeader, evs []*filter.Event) (string, bool) {
	var first string
	for i, ev := range evs {
		v, why := d.Value(ev)
		if why != "" {
			if why != subscription.OmitMissing {
				a.log.LogAttrs(context.Background(), slog.LevelDebug, "dynamic header left out",
					slog.String("subscription_id", sub.ID), slog.String("header", d.Name), slog.String("reason", why))
			}
			return "", false
		}
		if i == 0 {
			first = v
		} else if v != first {
			return "", false
		}
	}
	return first, true
}
