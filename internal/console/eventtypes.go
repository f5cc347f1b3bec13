package console

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/herald-events/herald/internal/eventtype"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/strictjson"
)

// EventTypeCatalog is the event-type catalog as the console's and the
// portal's pages read it and the admin's forms write it
// (control.EventTypes, as the API's routes).
type EventTypeCatalog interface {
	// Version is the catalog's version, which every write advances.
	Version(ctx context.Context) (int64, error)
	List(ctx context.Context, f store.EventTypeFilter, p store.Page) ([]eventtype.EventType, string, error)
	Get(ctx context.Context, name string) (eventtype.EventType, error)
	Create(ctx context.Context, in eventtype.Input) (eventtype.EventType, error)
	Update(ctx context.Context, name string, change func(*eventtype.EventType, time.Time) error) (eventtype.EventType, error)
	Archive(ctx context.Context, name string) (eventtype.EventType, error)
}

// eventTypePages are the catalog's pages: the list by group and a type
// with its versions, schemas and examples, for every session; the forms
// that add a type, add a version and archive, for admins only (an account
// key's POST is the 404 page, as the accounts' pages answer).
type eventTypePages struct {
	base
	catalog EventTypeCatalog
}

// routes adds the catalog's routes to mux (none without a catalog).
func (ep *eventTypePages) routes(mux *http.ServeMux, s *sessions) {
	if ep.catalog == nil {
		return
	}
	admin := (&accountPages{base: ep.base}).adminOnly
	mux.Handle("GET /console/event-types", s.signedIn(ep.list))
	mux.Handle("POST /console/event-types", s.signedIn(admin(s.change(ep.create))))
	mux.Handle("GET /console/event-types/{name}", s.signedIn(ep.show))
	mux.Handle("POST /console/event-types/{name}/versions", s.signedIn(admin(s.change(ep.addVersion))))
	mux.Handle("POST /console/event-types/{name}/archive", s.signedIn(admin(s.change(ep.archive))))
}

// eventTypeForm is the fields of the create and new version forms: a
// schema and an example as JSON text.
type eventTypeForm struct{ Name, Group, Description, Schema, Example string }

// eventTypeGroup is a group of the list's page, its types in name order.
type eventTypeGroup struct {
	Name  string
	Types []eventtype.EventType
}

// eventTypesView is the catalog's list and the create form.
type eventTypesView struct {
	Groups []eventTypeGroup
	pageLinks
	// Archived: the list shows archived types too (?archived=1).
	Archived bool
	Form     eventTypeForm
	Problem  formProblem
}

// list shows a page of the catalog (?cursor=, ?archived=1), its types
// gathered by group ("" last).
func (ep *eventTypePages) list(w http.ResponseWriter, r *http.Request, v *visit) {
	ep.showList(w, r, v, http.StatusOK, eventTypesView{})
}

func (ep *eventTypePages) showList(w http.ResponseWriter, r *http.Request, v *visit, status int, view eventTypesView) {
	cursor := r.URL.Query().Get("cursor")
	view.Archived = r.URL.Query().Get("archived") == "1"
	ts, next, err := ep.catalog.List(r.Context(), store.EventTypeFilter{IncludeArchived: view.Archived}, store.Page{Cursor: cursor, Limit: listSize})
	if err != nil {
		ep.storeError(w, r, v, err)
		return
	}
	view.Groups = groupTypes(ts)
	q := url.Values{}
	if view.Archived {
		q.Set("archived", "1")
	}
	view.pageLinks = newPageLinks(cursor, next, func(c string) string {
		q.Set("cursor", c)
		return withQuery("/console/event-types", q)
	})
	ep.render(w, r, status, "eventtypes", v, "Event types", view)
}

// groupTypes gathers ts by group, the groups in name order, the types
// without one last.
func groupTypes(ts []eventtype.EventType) []eventTypeGroup {
	var gs []eventTypeGroup
	for _, t := range ts {
		i := slices.IndexFunc(gs, func(g eventTypeGroup) bool { return g.Name == t.Group })
		if i < 0 {
			gs = append(gs, eventTypeGroup{Name: t.Group})
			i = len(gs) - 1
		}
		gs[i].Types = append(gs[i].Types, t)
	}
	slices.SortFunc(gs, func(a, b eventTypeGroup) int {
		switch {
		case a.Name == "" || b.Name == "":
			return len(b.Name) - len(a.Name) // "" after any name
		}
		return strings.Compare(a.Name, b.Name)
	})
	return gs
}

// create takes the create form (name, group, description, schema, example)
// as POST /v1/event-types takes its body: the schema is version 1, the
// example the type's one example. A problem is shown on the form naming
// its field, and nothing is made.
func (ep *eventTypePages) create(w http.ResponseWriter, r *http.Request, v *visit) {
	f := eventTypeForm{Name: r.PostForm.Get("name"), Group: r.PostForm.Get("group"), Description: r.PostForm.Get("description"),
		Schema: r.PostForm.Get("schema"), Example: r.PostForm.Get("example")}
	in := eventtype.Input{Name: &f.Name, Group: &f.Group, Description: &f.Description}
	if p := f.fill(&in, 1); p.status != 0 {
		ep.showList(w, r, v, p.status, eventTypesView{Form: f, Problem: p})
		return
	}
	t, err := ep.catalog.Create(r.Context(), in)
	if p := catalogProblem(err); p.status != 0 {
		ep.showList(w, r, v, p.status, eventTypesView{Form: f, Problem: p})
		return
	} else if err != nil {
		ep.storeError(w, r, v, err)
		return
	}
	redirect(w, r, "/console/event-types/"+url.PathEscape(t.Name)+"?done=created")
}

// fill sets in's schema version (from the form's schema, when given) and
// examples (the form's example, when given), or returns the problem of
// text that is not JSON.
func (f eventTypeForm) fill(in *eventtype.Input, version int) formProblem {
	if s := strings.TrimSpace(f.Schema); s != "" {
		field := "schemas." + strconv.Itoa(version)
		if !json.Valid([]byte(s)) {
			return formProblem{field, "is not JSON", http.StatusBadRequest}
		}
		in.Schemas = map[string]json.RawMessage{strconv.Itoa(version): json.RawMessage(s)}
	}
	if e := strings.TrimSpace(f.Example); e != "" {
		if !json.Valid([]byte(e)) {
			return formProblem{"examples[0]", "is not JSON", http.StatusBadRequest}
		}
		in.Examples = &[]json.RawMessage{json.RawMessage(e)}
	}
	return formProblem{}
}

// catalogProblem returns the form's problem of a catalog write's error, as
// the API answers it (internal/api/eventtypes.go); none for nil or a
// store error.
func catalogProblem(err error) formProblem {
	var ie *eventtype.ImmutableError
	var je *strictjson.Error
	var le *store.EventTypeLimitError
	switch {
	case errors.As(err, &ie):
		return formProblem{ie.Field(), ie.Error(), http.StatusConflict}
	case errors.As(err, &je):
		return formProblem{je.Field, je.Detail, http.StatusBadRequest}
	case errors.Is(err, store.ErrNameTaken):
		return formProblem{"name", "an event type of this name exists (archived types keep their names)", http.StatusConflict}
	case errors.As(err, &le) && le.Bytes > 0:
		return formProblem{"schemas", "the catalog's types would take more than " + strconv.Itoa(le.Bytes>>20) + " MiB together, the most they may", http.StatusConflict}
	case errors.As(err, &le):
		return formProblem{"name", "the catalog holds " + strconv.Itoa(le.Limit) + " event types, the most it may hold", http.StatusConflict}
	}
	return formProblem{}
}

// versionView is one schema version as the type's page shows it.
type versionView struct {
	Number int
	Schema string // indented
}

// eventTypeView is a type's page.
type eventTypeView struct {
	Type     eventtype.EventType
	Versions []versionView // newest first
	Examples []string      // indented
	Next     int           // the number a new version takes
	Form     eventTypeForm
	Problem  formProblem
	Notice   string
}

// eventTypeNotices are what a type's page says after its forms (?done=).
var eventTypeNotices = map[string]string{
	"created":  "Event type created.",
	"version":  "Version added.",
	"archived": "Archived: it is listed only with archived types, and its events are still accepted and delivered.",
}

// show shows the path's type (the 404 page when there is none).
func (ep *eventTypePages) show(w http.ResponseWriter, r *http.Request, v *visit) {
	ep.showType(w, r, v, http.StatusOK, eventTypeView{Notice: eventTypeNotices[r.URL.Query().Get("done")]})
}

func (ep *eventTypePages) showType(w http.ResponseWriter, r *http.Request, v *visit, status int, view eventTypeView) {
	t, err := ep.catalog.Get(r.Context(), r.PathValue("name"))
	if ep.failed(w, r, v, "event type", r.PathValue("name"), err) {
		return
	}
	view.Type, view.Next = t, t.Newest()+1
	vs := t.Versions()
	for i := len(vs) - 1; i >= 0; i-- {
		view.Versions = append(view.Versions, versionView{Number: vs[i], Schema: indent(t.Schemas[vs[i]])})
	}
	for _, ex := range t.Examples {
		view.Examples = append(view.Examples, indent(ex))
	}
	ep.render(w, r, status, "eventtype", v, t.Name, view)
}

// indent returns raw indented by two spaces (as it is when it does not
// parse).
func indent(raw []byte) string {
	var b bytes.Buffer
	if json.Indent(&b, raw, "", "  ") != nil {
		return string(raw)
	}
	return b.String()
}

// addVersion takes the new version form (schema, example): the schema is
// the next version, the example (when given) replaces the examples, as
// PATCH /v1/event-types/{name} takes them.
func (ep *eventTypePages) addVersion(w http.ResponseWriter, r *http.Request, v *visit) {
	name := r.PathValue("name")
	f := eventTypeForm{Schema: r.PostForm.Get("schema"), Example: r.PostForm.Get("example")}
	version, _ := strconv.Atoi(r.PostForm.Get("version"))
	var in eventtype.Input
	p := f.fill(&in, version)
	if p.status == 0 && in.Schemas == nil {
		p = formProblem{"schemas." + strconv.Itoa(version), "a new version needs its schema", http.StatusBadRequest}
	}
	if p.status == 0 {
		_, err := ep.catalog.Update(r.Context(), name, func(t *eventtype.EventType, now time.Time) error { return in.Apply(t, now) })
		if p = catalogProblem(err); p.status == 0 && ep.failed(w, r, v, "event type", name, err) {
			return
		}
	}
	if p.status != 0 {
		ep.showType(w, r, v, p.status, eventTypeView{Form: f, Problem: p})
		return
	}
	redirect(w, r, "/console/event-types/"+url.PathEscape(name)+"?done=version")
}

// archive archives the path's type.
func (ep *eventTypePages) archive(w http.ResponseWriter, r *http.Request, v *visit) {
	name := r.PathValue("name")
	if _, err := ep.catalog.Archive(r.Context(), name); ep.failed(w, r, v, "event type", name, err) {
		return
	}
	redirect(w, r, "/console/event-types/"+url.PathEscape(name)+"?done=archived")
}
