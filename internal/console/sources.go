package console

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/herald-events/herald/internal/broker"
	"github.com/herald-events/herald/internal/redact"
	"github.com/herald-events/herald/internal/source"
	"github.com/herald-events/herald/internal/store"
)

// SourceControl is how the admin's source forms change the broker sources:
// the calls the API's /v1/sources routes make (control.Sources), which
// check each change as the API does (source.Input, the destination
// policy) and tell this node's consumers at once.
type SourceControl interface {
	// Create stores the source in makes: a *strictjson.Error naming the
	// field at fault, a *subscription.DestinationError for a broker the
	// policy refuses, store.ErrNameTaken, store.ErrSourceLimit.
	Create(ctx context.Context, in source.Input) (source.Source, error)
	// Update applies in to source id (the same errors, and
	// store.ErrNotFound).
	Update(ctx context.Context, id string, in source.Input) (source.Source, error)
	// SetPaused pauses (true) or resumes a source: store.ErrNotFound.
	SetPaused(ctx context.Context, id string, paused bool) (source.Source, error)
	// Delete deletes a source and its dead letters: store.ErrNotFound.
	Delete(ctx context.Context, id string) error
}

// sourcePages are the admin's pages of the broker sources
// (docs/sources.md): the list, a source with its dead letters, its create
// and edit forms (source_form.go), pause, resume and delete. An account
// key is answered the 404 page on each (adminOnly), as the API answers it
// 403: sources belong to the installation's operator. A page shows a
// source's connection as the API does (broker.Settings.Shown): a URL's secret
// and the SASL password are never in a page.
type sourcePages struct {
	base
	sources SourceControl
}

// routes adds the source pages' routes to mux (none without Sources), each
// for admins only, each POST wrapped in the CSRF check (s.change).
func (sp *sourcePages) routes(mux *http.ServeMux, s *sessions) {
	if sp.sources == nil {
		return
	}
	admin := (&accountPages{base: sp.base}).adminOnly
	mux.Handle("GET /console/sources", s.signedIn(admin(sp.list)))
	mux.Handle("GET /console/sources/new", s.signedIn(admin(sp.newForm)))
	mux.Handle("POST /console/sources/new", s.signedIn(admin(s.change(sp.create))))
	mux.Handle("GET /console/sources/{id}", s.signedIn(admin(sp.show)))
	mux.Handle("GET /console/sources/{id}/edit", s.signedIn(admin(sp.editForm)))
	mux.Handle("POST /console/sources/{id}/edit", s.signedIn(admin(s.change(sp.edit))))
	mux.Handle("POST /console/sources/{id}/pause", s.signedIn(admin(s.change(sp.pause(true)))))
	mux.Handle("POST /console/sources/{id}/resume", s.signedIn(admin(s.change(sp.pause(false)))))
	mux.Handle("GET /console/sources/{id}/delete", s.signedIn(admin(sp.confirmDelete)))
	mux.Handle("POST /console/sources/{id}/delete", s.signedIn(admin(s.change(sp.delete))))
}

// sourceView is a source as the pages show it: its connection with its
// secrets masked (broker.Settings.Shown), what it reads, its state and its
// consumers' report.
type sourceView struct {
	ID, Name, Type, Account string
	// Conn is the connection as shown: never a password.
	Conn broker.Settings
	// Target is what it reads in words ("subject orders.>").
	Target                                 string
	Subject, Stream, Durable, Queue, Topic string
	Format                                 string
	Wrap                                   *source.Wrap
	// State is source.Source.State's: running, paused or failing.
	State string
	// Lag is the broker's count of messages not yet delivered, or
	// "unknown" (never told, or MQTT).
	Lag                                           string
	Received, Published, Duplicates, DeadLettered int64
	// LastError (secrets masked) and when; "" for none. ShortError is
	// its first listErrorBytes, for the list.
	LastError, ShortError string
	LastErrorAt           time.Time
	CreatedAt, UpdatedAt  time.Time
}

// listErrorBytes bounds the last error each row of the sources list
// shows (its page shows it whole).
const listErrorBytes = 200

// toSourceView is s as the pages show it.
func toSourceView(s source.Source) sourceView {
	c, st := s.Config, s.Status
	v := sourceView{ID: s.ID, Name: s.Name, Type: s.Type, Account: s.AccountID, Conn: c.Conn.Shown(), Subject: c.Subject,
		Stream: c.Stream, Durable: c.Durable, Queue: c.Queue, Topic: c.Topic, Format: c.Format, Wrap: c.Wrap, State: s.State(),
		Lag: "unknown", Received: st.Received, Published: st.Published, Duplicates: st.Duplicates, DeadLettered: st.DeadLettered,
		LastError: redact.Text(st.LastError), LastErrorAt: st.LastErrorAt, CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt}
	v.ShortError = excerpt([]byte(v.LastError), listErrorBytes)
	if st.Lag >= 0 {
		v.Lag = strconv.FormatInt(st.Lag, 10)
	}
	switch s.Type {
	case source.TypeNATS:
		v.Target = "subject " + c.Subject
	case source.TypeAMQP:
		v.Target = "queue " + c.Queue
	default:
		v.Target = "topic " + c.Topic
	}
	return v
}

// sourcesView is the sources list.
type sourcesView struct {
	Items []sourceView
	pageLinks
	Notice string
}

// list shows a page of every account's sources after ?cursor= (listSize
// of them), in id order.
func (sp *sourcePages) list(w http.ResponseWriter, r *http.Request, v *visit) {
	cursor := r.URL.Query().Get("cursor")
	srcs, next, err := sp.store.ListSources(r.Context(), store.Page{Cursor: cursor, Limit: listSize})
	if err != nil {
		sp.storeError(w, r, v, err)
		return
	}
	view := sourcesView{Notice: sourceNotices[r.URL.Query().Get("done")]}
	for _, s := range srcs {
		view.Items = append(view.Items, toSourceView(s))
	}
	view.pageLinks = newPageLinks(cursor, next, func(c string) string { return withQuery("/console/sources", url.Values{"cursor": {c}}) })
	sp.render(w, r, http.StatusOK, "sources", v, "Sources", view)
}

// deadLetterRow is a source's dead letter in its page's list: the start
// of its body as text (at most excerptBytes).
type deadLetterRow struct {
	ID, MessageID, Reason string
	Preview               string
	Size                  int64
	// Kept is the bytes of the body Herald kept (source.MaxDeadLetterBody
	// at most), less than Size when the message was longer.
	Kept       int
	ReceivedAt time.Time
}

// sourcePageView is a source's page: the source, its consumer's lease,
// a page of its dead letters and the notice of the form it follows.
type sourcePageView struct {
	sourceView
	// Leader is the node whose consumer reads the source (its lease's
	// owner, until LeaderUntil); "" when none holds it.
	Leader      string
	LeaderUntil time.Time
	DeadLetters []deadLetterRow
	pageLinks
	Notice string
}

// sourceNotices are what a source's page (and the list, after a delete)
// says after its forms (?done=).
var sourceNotices = map[string]string{
	"created":           "Source created: its consumer starts within a few seconds.",
	"saved":             "Saved: its consumer restarts with the new settings.",
	"unchanged":         "Nothing changed: the form held the source's settings as they were.",
	"paused":            "Paused: its consumer has stopped; the broker keeps its messages until it is resumed.",
	"paused-unchanged":  "Nothing changed: it was paused already.",
	"resumed":           "Resumed: its consumer starts again where the broker kept its place.",
	"resumed-unchanged": "Nothing changed: it was running already.",
	"deleted":           "Source deleted, with its dead letters.",
}

// show shows the path's source, and a page of its dead letters after
// ?cursor= (listSize of them, oldest first).
func (sp *sourcePages) show(w http.ResponseWriter, r *http.Request, v *visit) {
	src, ok := sp.pathSource(w, r, v)
	if !ok {
		return
	}
	cursor := r.URL.Query().Get("cursor")
	dls, next, err := sp.store.ListSourceDeadLetters(r.Context(), src.ID, store.Page{Cursor: cursor, Limit: listSize})
	if err != nil {
		sp.storeError(w, r, v, err)
		return
	}
	view := sourcePageView{sourceView: toSourceView(src), Notice: sourceNotices[r.URL.Query().Get("done")]}
	if view.Leader, view.LeaderUntil, err = sp.store.SourceLeader(r.Context(), src.ID, sp.now()); err != nil {
		sp.storeError(w, r, v, err)
		return
	}
	for _, dl := range dls {
		view.DeadLetters = append(view.DeadLetters, deadLetterRow{ID: dl.ID, MessageID: dl.MessageID, Reason: dl.Reason,
			Preview: excerpt(dl.Body, excerptBytes), Size: dl.Size, Kept: len(dl.Body), ReceivedAt: dl.ReceivedAt})
	}
	view.pageLinks = newPageLinks(cursor, next, func(c string) string {
		return withQuery("/console/sources/"+src.ID, url.Values{"cursor": {c}})
	})
	sp.render(w, r, http.StatusOK, "source", v, "Source "+sourceTitle(src), view)
}

// sourceTitle is how a page names src: its name, or its id without one.
func sourceTitle(src source.Source) string {
	if src.Name != "" {
		return src.Name
	}
	return src.ID
}

// pathSource reads the source of the path's id, answering the 404 page
// when there is none.
func (sp *sourcePages) pathSource(w http.ResponseWriter, r *http.Request, v *visit) (source.Source, bool) {
	return own(sp.base, w, r, v, "source", sp.store.GetSource, func(source.Source) string { return "" })
}

// pause returns the handler of the pause (true) and resume forms: the
// source is paused or resumed as the API's POST /v1/sources/{id}/pause and
// …/resume do it (SetPaused), and the browser goes back to its page,
// which says so, or that nothing changed when it was so already.
func (sp *sourcePages) pause(paused bool) sessionHandler {
	done := map[bool]string{true: "paused", false: "resumed"}[paused]
	return func(w http.ResponseWriter, r *http.Request, v *visit) {
		src, ok := sp.pathSource(w, r, v)
		if !ok {
			return
		}
		if _, err := sp.sources.SetPaused(r.Context(), src.ID, paused); sp.failed(w, r, v, "source", src.ID, err) {
			return
		}
		if src.Paused == paused {
			done += "-unchanged"
		}
		redirect(w, r, "/console/sources/"+src.ID+"?done="+done)
	}
}

// confirmDelete asks whether to delete the source, saying what becomes of
// its messages and dead letters.
func (sp *sourcePages) confirmDelete(w http.ResponseWriter, r *http.Request, v *visit) {
	src, ok := sp.pathSource(w, r, v)
	if !ok {
		return
	}
	sp.render(w, r, http.StatusOK, "source_delete", v, "Delete "+sourceTitle(src), toSourceView(src))
}

// delete takes the confirmation's form: the source is deleted as the
// API's DELETE /v1/sources/{id} deletes it (its consumer stops, its dead
// letters go), and the browser goes to the list. A source deleted
// meanwhile is the 404 page.
func (sp *sourcePages) delete(w http.ResponseWriter, r *http.Request, v *visit) {
	id := r.PathValue("id")
	if sp.failed(w, r, v, "source", id, sp.sources.Delete(r.Context(), id)) {
		return
	}
	redirect(w, r, "/console/sources?done=deleted")
}
