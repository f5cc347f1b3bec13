package console

import (
	"context"
	"html/template"
	"net/http"
	"strings"
	"sync"

	"github.com/herald-events/herald/internal/eventtype"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/testsignal"
)

// The portal's event types: those a subscriber may choose for the
// account's subscriptions, with what each carries. The account's
// settings.portal_event_types when set; else every type of the catalog
// that is not archived (every page: allEventTypes); else none (the
// subscription forms then take types typed by hand).

// choices returns the types the session's account may choose for a
// subscription that takes current (typeChoices: the account's
// settings.portal_event_types, else the catalog's, keeping current's
// archived types, and its types outside the catalog unless the account
// takes catalog types only); nil when there is no list to choose from, or
// the catalog could not be read (the forms then take typed types, which
// the API's checks still hold to settings.catalog_only).
func (p portalPages) choices(r *http.Request, v *portalVisit, current []string) []typeChoice {
	set := v.account.Settings
	cs, err := typeChoices(r.Context(), p.EventTypes, set.PortalEventTypes, current, set.CatalogOnly)
	if err != nil {
		p.Logger.Warn("reading the event types for the portal", "err", err)
		return nil
	}
	return cs
}

// portalType is a type as the portal's event types page shows it: its
// newest schema and its first example, indented ("" for none).
type portalType struct {
	Name, Description, Group, Schema, Example string
	Version                                   int
	Deprecated                                bool
	// Unknown: the account's settings name the type, but the catalog
	// does not describe it.
	Unknown bool
}

// eventTypes shows the types the session's account may choose, each with
// its description, newest schema and an example: its
// settings.portal_event_types, else the catalog's types that are not
// archived. Each type's section comes from the page's shared part as of
// the catalog's version now (portalTypesCache).
func (p portalPages) eventTypes(w http.ResponseWriter, r *http.Request, v *portalVisit) {
	var shared *portalTypes
	if p.EventTypes != nil {
		var err error
		if shared, err = p.types.get(r.Context(), p.EventTypes, &p.TestSignals.TypesBuilt); err != nil {
			p.pages.portalStoreError(w, r, v, err)
			return
		}
	}
	var out []template.HTML
	if names := v.account.Settings.PortalEventTypes; len(names) > 0 {
		for _, n := range names {
			sec, ok := shared.section(n)
			if !ok {
				sec = renderPortalType(portalType{Name: n, Unknown: true})
			}
			out = append(out, sec)
		}
	} else if shared != nil {
		for _, n := range shared.current {
			sec, _ := shared.section(n)
			out = append(out, sec)
		}
	}
	p.pages.portalRender(w, r, http.StatusOK, "eventtypes", v, "Event types", out)
}

// portalTypes is the event types page's costly part as of one catalog
// version: every type's section (archived types too: the account's
// settings may name one), rendered, by name, and the names of the types
// not archived, in name order. It is read only once built.
type portalTypes struct {
	version  int64
	sections map[string]template.HTML
	current  []string
}

// section returns the section of the type name (false: the catalog does
// not hold it, or t is nil: there is no catalog).
func (t *portalTypes) section(name string) (template.HTML, bool) {
	if t == nil {
		return "", false
	}
	sec, ok := t.sections[name]
	return sec, ok
}

// portalTypesCache shares the event types page's costly part, reading the
// whole catalog (up to eventtype.MaxCatalogBytes) and rendering every
// type's schema and example, among its requests: it is built once per
// catalog version, one build at a time (the others wait for it), as the
// API's AsyncAPI document is. Built per request, as many copies of the
// catalog as requests would be in memory at once, from any portal session.
type portalTypesCache struct {
	mu   sync.Mutex
	last *portalTypes
}

// get returns the page's part as of the catalog's version now, building
// it when the version moved since the last one built (built emits the
// version built).
func (c *portalTypesCache) get(ctx context.Context, cat EventTypeCatalog, built *testsignal.Signal[int64]) (*portalTypes, error) {
	v, err := cat.Version(ctx)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.last != nil && c.last.version == v {
		return c.last, nil
	}
	ts, err := allEventTypes(ctx, cat, store.EventTypeFilter{IncludeArchived: true})
	if err != nil {
		return nil, err
	}
	pt := &portalTypes{version: v, sections: make(map[string]template.HTML, len(ts))}
	for _, t := range ts {
		pt.sections[t.Name] = renderPortalType(toPortalType(t))
		if !t.Archived() {
			pt.current = append(pt.current, t.Name)
		}
	}
	c.last = pt
	built.Signal(v)
	return pt, nil
}

// renderPortalType renders t's section of the event types page (the
// "portal-event-type" template, html/template's escaping).
func renderPortalType(t portalType) template.HTML {
	var b strings.Builder
	if err := portalTemplates["eventtypes"].ExecuteTemplate(&b, "portal-event-type", t); err != nil {
		// The template is fixed and the data plain strings: it cannot fail but by a bug.
		panic("console: rendering an event type's section: " + err.Error())
	}
	return template.HTML(b.String()) // escaped by the template
}

func toPortalType(t eventtype.EventType) portalType {
	pt := portalType{Name: t.Name, Description: t.Description, Group: t.Group, Version: t.Newest(), Deprecated: t.Deprecated}
	if pt.Version > 0 {
		pt.Schema = indent(t.Schemas[pt.Version])
	}
	if len(t.Examples) > 0 {
		pt.Example = indent(t.Examples[0])
	}
	return pt
}
