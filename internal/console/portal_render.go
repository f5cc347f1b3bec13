package console

import (
	"html/template"
	"net/http"

	"github.com/herald-events/herald/internal/account"
)

// The portal's pages are the files of templates/portal/: frame.html is
// their frame (no console navigation: the account's name and the
// subscriptions link only), each other file defines the "content" of its
// page. They share the console's layout.html pieces (delivery-state,
// pages) and functions.

// portalTemplates holds each portal page's template, by its file name
// without .html.
var portalTemplates = parsePortalPages()

func parsePortalPages() map[string]*template.Template {
	base := template.Must(template.New("layout.html").Funcs(funcs).ParseFS(templateFS,
		"templates/layout.html", "templates/portal/frame.html", partials))
	return parseEach(base, "templates/portal/*.html", "frame")
}

// portalFrame is what the portal's frame is given: the page's title, the
// session's account and CSRF token (Signed false without a session), and
// the page's own data.
type portalFrame struct {
	Title   string
	Signed  bool
	Account account.Account
	CSRF    string
	Data    any
}

// portalRender answers status with the portal page name, in the frame of
// v's session (nil: none).
func (p *pages) portalRender(w http.ResponseWriter, r *http.Request, status int, name string, v *portalVisit, title string, data any) {
	f := portalFrame{Title: title, Data: data}
	if v != nil {
		f.Signed, f.Account, f.CSRF = true, v.account, v.csrf
	}
	p.execute(w, r, status, portalTemplates[name], "frame.html", name, f)
}

// portalError answers status with the portal's error page saying
// message.
func (p *pages) portalError(w http.ResponseWriter, r *http.Request, v *portalVisit, status int, message string) {
	retryLater(w, status)
	text := http.StatusText(status)
	p.portalRender(w, r, status, "error", v, text, errorView{Status: status, Text: text, Message: message})
}

// portalStoreError answers for an error of the store as storeError does,
// with the portal's error page.
func (p *pages) portalStoreError(w http.ResponseWriter, r *http.Request, v *portalVisit, err error) {
	if status, msg := p.storeProblem(r, err); status != 0 {
		p.portalError(w, r, v, status, msg)
	}
}
