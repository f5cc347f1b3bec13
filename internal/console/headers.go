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
const ContentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

// securityHeaders sets the headers every console response carries: the
// Content-Security-Policy, nosniff, a referrer kept to the console's
// origin, and Cache-Control no-store, since pages show data (staticFiles
// lets its files be cached).
func securityHeaders(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Content-Security-Policy", ContentSecurityPolicy)
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("Referrer-Policy", "same-origin")
		hd.Set("X-Frame-Options", "DENY") // for browsers without frame-ancestors
		hd.Set("Cache-Control", "no-store")
		h.ServeHTTP(w, r)
	})
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
