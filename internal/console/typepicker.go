package console

import (
	"context"
	"slices"

	"github.com/herald-events/herald/internal/eventtype"
	"github.com/herald-events/herald/internal/store"
)

// The event types a subscription form offers, in the console
// (subscription_form.go) and the portal (portal_pages.go): one list of
// checkboxes, each type with its description, made by typeChoices and
// shown by the "event-types-field" template (templates/layout.html).

// typeChoice is one event type a form offers.
type typeChoice struct {
	Name, Description string
	// Archived: the catalog archived it; offered only because the
	// subscription takes it (so that saving keeps it).
	Archived bool
	// Unknown: the catalog does not hold it; offered only because the
	// subscription takes it, or the portal's settings name it.
	Unknown bool
}

// typeChoices returns the types a form offers, in this order:
//   - allowed, when set (the portal's settings.portal_event_types), each
//     as the catalog describes it;
//   - else the catalog's types that are not archived, in name order, and
//     after them those of current (the subscription's types) they leave
//     out: archived ones, and, unless catalogOnly (the account's
//     settings.catalog_only: a form then offers catalog types only),
//     types the catalog does not hold. Nil when the catalog has no type
//     to offer (the form takes types typed by hand).
//
// The catalog is read whole (allEventTypes), archived types included;
// cat nil is no catalog.
func typeChoices(ctx context.Context, cat EventTypeCatalog, allowed, current []string, catalogOnly bool) ([]typeChoice, error) {
	var ts []eventtype.EventType
	if cat != nil {
		var err error
		if ts, err = allEventTypes(ctx, cat, store.EventTypeFilter{IncludeArchived: true}); err != nil {
			return nil, err
		}
	}
	byName := make(map[string]eventtype.EventType, len(ts))
	for _, t := range ts {
		byName[t.Name] = t
	}
	choice := func(name string) typeChoice {
		t, ok := byName[name]
		return typeChoice{Name: name, Description: t.Description, Archived: ok && t.Archived(), Unknown: !ok}
	}
	var out []typeChoice
	if len(allowed) > 0 {
		for _, n := range allowed {
			out = append(out, choice(n))
		}
		return out, nil
	}
	for _, t := range ts {
		if !t.Archived() {
			out = append(out, choice(t.Name))
		}
	}
	if len(out) == 0 {
		return nil, nil
	}
	for _, n := range current {
		if c := choice(n); !offered(out, n) && !(c.Unknown && catalogOnly) {
			out = append(out, c)
		}
	}
	return out, nil
}

// allEventTypes reads every page of the catalog's types that f selects:
// at most eventtype.MaxEventTypes types, eventtype.MaxCatalogBytes
// together. One page (store.MaxPageBytes) would leave out the types past
// it, which a form would then not offer, and dropped from a subscription
// that takes them when saved.
func allEventTypes(ctx context.Context, cat EventTypeCatalog, f store.EventTypeFilter) ([]eventtype.EventType, error) {
	var all []eventtype.EventType
	cursor := ""
	for range eventtype.MaxEventTypes {
		ts, next, err := cat.List(ctx, f, store.Page{Cursor: cursor, Limit: store.MaxLimit})
		if err != nil {
			return nil, err
		}
		all = append(all, ts...)
		if next == "" {
			break
		}
		cursor = next
	}
	return all, nil
}

// offered reports whether cs holds the type name.
func offered(cs []typeChoice, name string) bool {
	return slices.ContainsFunc(cs, func(c typeChoice) bool { return c.Name == name })
}

// typePicker is what the "event-types-field" template shows: the choices
// (none: a text field of the types), the types checked, the form's
// problem, and whether types outside the choices may be typed besides
// (Other: the console's form, unless the account takes catalog types
// only).
type typePicker struct {
	Choices []typeChoice
	Checked []string
	Problem formProblem
	Other   bool
}

// On reports whether the type name is checked.
func (p typePicker) On(name string) bool { return slices.Contains(p.Checked, name) }

// Others are the types checked that are not among the choices: typed in
// the Other field, shown there again.
func (p typePicker) Others() []string {
	var out []string
	for _, t := range p.Checked {
		if !offered(p.Choices, t) {
			out = append(out, t)
		}
	}
	return out
}
