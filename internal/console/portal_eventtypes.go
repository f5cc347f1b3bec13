package console

import (
	"errors"
	"net/http"

	"github.com/herald-events/herald/internal/eventtype"
	"github.com/herald-events/herald/internal/store"
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

// catalogTypes returns the catalog's types that are not archived, in
// name order (none without a catalog).
func (p portalPages) catalogTypes(r *http.Request) ([]eventtype.EventType, error) {
	if p.EventTypes == nil {
		return nil, nil
	}
	return allEventTypes(r.Context(), p.EventTypes, store.EventTypeFilter{})
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
// its description, newest schema and an example.
func (p portalPages) eventTypes(w http.ResponseWriter, r *http.Request, v *portalVisit) {
	var out []portalType
	if names := v.account.Settings.PortalEventTypes; len(names) > 0 {
		for _, n := range names {
			t, err := p.described(r, n)
			if err != nil {
				p.pages.portalStoreError(w, r, v, err)
				return
			}
			out = append(out, t)
		}
	} else {
		ts, err := p.catalogTypes(r)
		if err != nil {
			p.pages.portalStoreError(w, r, v, err)
			return
		}
		for _, t := range ts {
			out = append(out, toPortalType(t))
		}
	}
	p.pages.portalRender(w, r, http.StatusOK, "eventtypes", v, "Event types", out)
}

// described returns the type name as the catalog describes it, or as
// Unknown when it does not.
func (p portalPages) described(r *http.Request, name string) (portalType, error) {
	if p.EventTypes == nil {
		return portalType{Name: name, Unknown: true}, nil
	}
	t, err := p.EventTypes.Get(r.Context(), name)
	if errors.Is(err, store.ErrNotFound) {
		return portalType{Name: name, Unknown: true}, nil
	}
	return toPortalType(t), err
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
