package console

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/herald-events/herald/internal/auth"
	"github.com/herald-events/herald/internal/store"
)

// Pages are html/template files in templates/, embedded: layout.html is
// the frame every page shares (head, navigation, who is signed in, the
// sign-out form) and defines the pieces several pages share (the admin's
// account-choice, a list's delivery-state cells, a list's pages links);
// each other file defines the "content" its page puts in it. html/template escapes every value for where it lands.

//go:embed templates
var templateFS embed.FS

// pages makes the console's answers: pages from the templates, the error
// page, the static files. (A handler that panics is the API's recoverer's:
// internal/api mounts the console inside it.)
type pages struct {
	log *slog.Logger
}

// templates holds each page's template (the layout with its content), by the
// page's file name without .html.
var templates = parsePages()

var funcs = template.FuncMap{
	// when writes a time in one compact form, in UTC to the second ("Jan
	// 5 09:00:00"), with the full time (year, milliseconds, zone) on hover;
	// "—" for the zero time.
	"when": when,
	// idle is how long a session may go unused (IdleTimeout), in words.
	"idle": func() string { return idleText },
	// seg escapes a name as one path segment of a link (an event type's
	// name may hold '/', '?', '#' or '%'; html/template leaves those
	// as they are in a URL).
	"seg": url.PathEscape,
}

// when is the template function of that name: a <time> element whose
// text is the compact form and whose title is the full time.
func when(t time.Time) template.HTML {
	if t.IsZero() {
		return "—"
	}
	u := t.UTC()
	// The formats hold no character HTML escapes.
	return template.HTML(`<time datetime="` + u.Format(time.RFC3339Nano) + `" title="` + u.Format(fullTime) + `">` +
		u.Format(compactTime) + `</time>`)
}

// The forms of when: compactTime in the text, fullTime on hover.
const (
	compactTime = "Jan 2 15:04:05"
	fullTime    = "2006-01-02 15:04:05.000 UTC"
)

// partials are the pieces the console's and the portal's pages share
// beyond the layout's (the subscription forms' expressions and preview).
const partials = "templates/partials/*.html"

func parsePages() map[string]*template.Template {
	layout := template.Must(template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", partials))
	return parseEach(layout, "templates/*.html", "layout")
}

// parseEach returns a template for each file of glob but the one named
// frame: base (cloned) with the file, by the file's name without .html.
func parseEach(base *template.Template, glob, frame string) map[string]*template.Template {
	files, err := fs.Glob(templateFS, glob)
	if err != nil {
		panic(err)
	}
	out := map[string]*template.Template{}
	for _, f := range files {
		name := strings.TrimSuffix(path.Base(f), ".html")
		if name != frame {
			out[name] = template.Must(template.Must(base.Clone()).ParseFS(templateFS, f))
		}
	}
	return out
}

// frame is what the layout is given: the page's title and name (its
// navigation entry), who is signed in (Signed false on pages without a
// session), the session's CSRF token for the forms, and the page's own
// data.
type frame struct {
	Title  string
	Page   string
	Signed bool
	Who    auth.Principal
	Admin  bool
	CSRF   string
	Data   any
}

// render answers status with the page name, in the frame of v's session
// (nil: none). The page is made whole before anything is sent, so a
// template that fails answers 500 rather than half a page.
func (p *pages) render(w http.ResponseWriter, r *http.Request, status int, name string, v *visit, title string, data any) {
	f := frame{Title: title, Page: name, Data: data}
	if v != nil {
		f.Signed, f.Who, f.Admin, f.CSRF = true, v.Principal, v.admin(), v.csrf
	}
	p.execute(w, r, status, templates[name], "layout.html", name, f)
}

// execute answers status with the template root of t, given data. The
// page is made whole before anything is sent, so a template that fails
// answers 500 rather than half a page.
func (p *pages) execute(w http.ResponseWriter, r *http.Request, status int, t *template.Template, root, name string, data any) {
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, root, data); err != nil {
		p.log.Error("console: rendering a page", "page", name, "path", r.URL.Path, "err", err)
		http.Error(w, "The page could not be made; the server's log says why.", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = buf.WriteTo(w)
}

// errorView is what the error page shows.
type errorView struct {
	Status  int
	Text    string
	Message string
}

// errorPage answers status with the error page saying message, in the
// frame of v's session (nil: none).
func (p *pages) errorPage(w http.ResponseWriter, r *http.Request, v *visit, status int, message string) {
	retryLater(w, status)
	text := http.StatusText(status)
	p.render(w, r, status, "error", v, text, errorView{Status: status, Text: text, Message: message})
}

// storeUnavailable is what a page says when the store is away (its
// database stopped or unreachable, its disk full).
const storeUnavailable = "The store is unavailable; retry shortly."

// storeError answers for an error of the store: 400 for a cursor the list
// did not give, 503 with Retry-After (errorPage) when the store is
// unavailable (store.ErrUnavailable, ErrClosed, out of time), nothing when the
// browser went away, 500 (and a log line) otherwise.
func (p *pages) storeError(w http.ResponseWriter, r *http.Request, v *visit, err error) {
	if status, msg := p.storeProblem(r, err); status != 0 {
		p.errorPage(w, r, v, status, msg)
	}
}

// storeProblem is what storeError answers for err: the status and the
// message, 0 when it answers nothing (the browser went away).
func (p *pages) storeProblem(r *http.Request, err error) (int, string) {
	switch {
	case errors.Is(err, store.ErrInvalidCursor):
		return http.StatusBadRequest, "This page's link (its cursor) is not one the list gave: start from the list's first page."
	case errors.Is(err, store.ErrUnavailable), errors.Is(err, store.ErrClosed), errors.Is(err, context.DeadlineExceeded):
		return http.StatusServiceUnavailable, storeUnavailable
	case errors.Is(err, context.Canceled):
		return 0, ""
	default:
		p.log.Error("console: store error", "method", r.Method, "path", r.URL.Path, "err", err)
		return http.StatusInternalServerError, "Something went wrong; the server's log says what."
	}
}

// retryLater sets Retry-After (store.RetryAfter, as the API does) on a 503
// page: every 503 the console and the portal answer is a refusal that
// passes by itself.
func retryLater(w http.ResponseWriter, status int) {
	if status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", strconv.Itoa(int(store.RetryAfter/time.Second)))
	}
}
