package console

import (
	"embed"
	"io/fs"
	"net/http"
	"strings"
)

// ContentSecurityPolicy is sent with every console response: nothing loads
// but the console's own scripts, styles and images (no inline script or
// style, no eval), forms post only to the console's origin, and no page of
// any origin may frame the console.
const ContentSecurityPolicy = cspBase + "frame-ancestors 'none'"

// cspBase is ContentSecurityPolicy but its frame-ancestors, which the
// portal's pages set from their account (setPortalHeaders).
const cspBase = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"form-action 'self'; base-uri 'none'; "

// securityHeaders sets the headers every console response carries: the
// Content-Security-Policy, nosniff, a referrer kept to the console's
// origin, and Cache-Control no-store, since pages show data (staticFiles
// lets its files be cached).
func securityHeaders(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		setSecurityHeaders(w.Header(), nil)
		h.ServeHTTP(w, r)
	})
}

// setSecurityHeaders sets securityHeaders' headers on hd, the CSP's
// frame-ancestors being the origins of ancestors ('none' without any, and
// then X-Frame-Options DENY as well, for browsers without frame-ancestors).
func setSecurityHeaders(hd http.Header, ancestors []string) {
	fa, xfo := "'none'", "DENY"
	if len(ancestors) > 0 {
		fa, xfo = strings.Join(ancestors, " "), ""
	}
	hd.Set("Content-Security-Policy", cspBase+"frame-ancestors "+fa)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "same-origin")
	if xfo != "" {
		hd.Set("X-Frame-Options", xfo)
	} else {
		hd.Del("X-Frame-Options")
	}
	hd.Set("Cache-Control", "no-store")
}

// setPortalHeaders sets the headers of a portal response: the console's,
// frame-ancestors being the account's settings.portal_frame_ancestors for
// a visit of a session ('none' for v nil). The origins were checked when
// stored (account.Settings), so none can add a directive.
func setPortalHeaders(w http.ResponseWriter, v *portalVisit) {
	var ancestors []string
	if v != nil {
		ancestors = v.account.Settings.PortalFrameAncestors
	}
	setSecurityHeaders(w.Header(), ancestors)
}

//go:embed static
var staticFS embed.FS

// staticMaxAge is how long a browser may keep a static file without
// asking again: short, since their paths do not change between releases.
const staticMaxAge = "max-age=300"

// staticFiles serves the embedded files of static/ under
// /console/static/; they hold no data, so a browser may cache them for
// staticMaxAge. Any other path there (a directory, a file that is not
// there) is notFound's.
func (p *pages) staticFiles(notFound http.HandlerFunc) http.Handler {
	sub, err := fs.Sub(staticFS, "static")
	if err != nil {
		panic(err) // the directory is embedded: it is there
	}
	files := http.StripPrefix(Prefix+"static/", http.FileServerFS(sub))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := strings.TrimPrefix(r.URL.Path, Prefix+"static/")
		if st, err := fs.Stat(sub, name); err != nil || st.IsDir() {
			notFound(w, r)
			return
		}
		w.Header().Set("Cache-Control", staticMaxAge)
		files.ServeHTTP(w, r)
	})
}
