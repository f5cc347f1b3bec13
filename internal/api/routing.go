package api

import (
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Problem types of the HTTP layer (beside problem.go's).
const (
	probMethod         = "urn:herald:problem:method-not-allowed"
	probCrossOrigin    = "urn:herald:problem:cross-origin"
	probMalformed      = "urn:herald:problem:malformed-request"
	probHeaderTooLarge = "urn:herald:problem:header-too-large"
)

// bodyKind is what a route takes as its request body. For a route that changes
// something (any method but GET and HEAD) it decides the Content-Types the
// route accepts; see guard.
type bodyKind int

const (
	// noBody: a read, or a change that reads no body (DELETE, redeliver,
	// enable). A change accepts no Content-Type or application/json.
	noBody bodyKind = iota
	// jsonBody: one JSON object; application/json only.
	jsonBody
	// optionalBody: one JSON object or nothing (secret rotate, receive):
	// a body must be application/json; without one, no Content-Type is
	// accepted too.
	optionalBody
	// eventsBody: POST /v1/events, whose formats event.Parse checks (its
	// own 415 for any other).
	eventsBody
)

// crossOrigin refuses the change requests a browser sends for a page of
// another origin (Sec-Fetch-Site, else Origin against Host). Clients that
// are not browsers send neither header and pass.
var crossOrigin = http.NewCrossOriginProtection()

// guard runs rt's handler only for requests a web page on another site
// cannot make a browser send. Every change answers 403 when a browser says
// it comes from another origin. Besides, whatever the browser: a change
// with a JSON body takes only application/json, so does an optional body
// when one is sent (a Content-Length other than 0), and a change without a
// body takes only no Content-Type or application/json, so that the
// Content-Types a page can send cross-site without a CORS preflight (text/plain,
// application/x-www-form-urlencoded, multipart/form-data) are refused with
// 415 before anything is read. Herald answers no preflight (it sends no
// CORS headers), so a browser sends nothing else cross-site. A body-less
// POST with no Content-Type is a simple request too: the cross-origin check
// is what refuses that one.
func guard(rt route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			rt.handler.ServeHTTP(w, r)
			return
		}
		if err := crossOrigin.Check(r); err != nil {
			writeProblem(w, Problem{Type: probCrossOrigin, Title: "Cross-origin request", Status: http.StatusForbidden,
				Detail: "a browser sent this request for a page of another origin; Herald's API takes changes only from programs, not from web pages (" + err.Error() + ")"})
			return
		}
		ct := r.Header.Get("Content-Type")
		switch {
		case rt.body == jsonBody && !isJSON(ct):
			unsupportedMediaType(w, ct, "the body must be JSON sent as application/json"+curlHint(ct))
			return
		case rt.body == optionalBody && !isJSON(ct) && (ct != "" || r.ContentLength != 0):
			unsupportedMediaType(w, ct, "this request's body is optional: send none, or send a JSON object as application/json"+curlHint(ct))
			return
		case rt.body == noBody && ct != "" && !isJSON(ct):
			unsupportedMediaType(w, ct, "this request takes no body; send no Content-Type, or application/json")
			return
		}
		rt.handler.ServeHTTP(w, r)
	})
}

// isJSON reports whether a Content-Type is application/json, with any
// parameters, the charset (if given) being UTF-8.
func isJSON(ct string) bool {
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil || mt != "application/json" {
		return false
	}
	cs, ok := params["charset"]
	return !ok || strings.EqualFold(cs, "utf-8")
}

// curlHint says, for the Content-Type curl's -d sends unless told
// otherwise, how to send JSON instead.
func curlHint(ct string) string {
	if mt, _, _ := mime.ParseMediaType(ct); mt == "application/x-www-form-urlencoded" {
		return " (curl -d sends application/x-www-form-urlencoded: add -H 'Content-Type: application/json')"
	}
	return ""
}

func unsupportedMediaType(w http.ResponseWriter, ct, want string) {
	got := "content type " + quoteHeader(ct) + " is not accepted: "
	if ct == "" {
		got = "no content type: "
	}
	writeProblem(w, Problem{Type: probMediaType, Title: "Unsupported media type", Status: http.StatusUnsupportedMediaType,
		Field: "content-type", Detail: got + want})
}

// quoteHeader quotes a header value for a problem's detail, cut to 100
// bytes.
func quoteHeader(v string) string {
	if len(v) > 100 {
		v = v[:100] + "…"
	}
	return `"` + strings.ToValidUTF8(v, "\uFFFD") + `"`
}

// cleanPathsOnly answers 404 for a path not in canonical form (a doubled
// slash, a "." or ".." segment, or no leading slash), which ServeMux would
// redirect to its cleaned form with an HTML body. Not a redirect: clients
// are programs building paths from ids, so such a path is their bug, and a
// 404 naming the clean path says so at once where a redirect would hide it
// (and many clients do not send a POST's body again after one).
func cleanPathsOnly(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Path
		if !strings.HasPrefix(p, "/") {
			notRouted(w, r, "")
			return
		}
		clean := path.Clean(p)
		if strings.HasSuffix(p, "/") && clean != "/" {
			clean += "/"
		}
		if clean != p {
			notRouted(w, r, " (paths are not cleaned: without its doubled slash or dot segment this one is "+clean+")")
			return
		}
		h.ServeHTTP(w, r)
	})
}

// maxQueryValue bounds a query parameter's value; the longest a list filter
// takes is an event id (512 bytes).
const maxQueryValue = 1024

// checkQuery answers 400 naming the parameter for a query string that is
// not valid form encoding, or a parameter value that is not valid UTF-8,
// holds a control character or is over maxQueryValue bytes: no handler
// sees such a value.
func checkQuery(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q, err := url.ParseQuery(r.URL.RawQuery)
		if err != nil {
			invalid(w, "query", "the query string is not valid form encoding")
			return
		}
		for name, vs := range q {
			for _, v := range vs {
				switch {
				case len(v) > maxQueryValue:
					invalid(w, name, fmt.Sprintf("must be at most %d bytes", maxQueryValue))
					return
				case !utf8.ValidString(v) || strings.ContainsFunc(v, unicode.IsControl):
					invalid(w, name, "must be UTF-8 text without control characters")
					return
				}
			}
		}
		h.ServeHTTP(w, r)
	})
}

func notRouted(w http.ResponseWriter, r *http.Request, why string) {
	writeProblem(w, Problem{Type: probNotFound, Title: "Not found", Status: http.StatusNotFound, Detail: "no route " + r.Method + " " + r.URL.Path + why})
}

// noRoute answers a request no route matched: 405 with an Allow header
// when its path is a route's (the methods are the routes' of that path,
// with HEAD where there is GET, as ServeMux serves it), 404 otherwise. A
// ServeMux of the routes' paths alone, without methods, finds the path the
// way the routes' ServeMux matches it.
func noRoute(routes []route) http.Handler {
	methods := map[string][]string{}
	var paths []string
	for _, rt := range routes {
		pattern, _, _, _ := splitAction(rt.pattern)
		method, p, _ := strings.Cut(pattern, " ")
		if methods[p] == nil {
			paths = append(paths, p)
		}
		if slices.Contains(methods[p], method) {
			continue // another action of the path
		}
		methods[p] = append(methods[p], method)
		if method == http.MethodGet {
			methods[p] = append(methods[p], http.MethodHead)
		}
	}
	byPath := http.NewServeMux()
	for _, p := range paths {
		slices.Sort(methods[p])
		allow := strings.Join(methods[p], ", ")
		byPath.HandleFunc(p, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Allow", allow)
			writeProblem(w, Problem{Type: probMethod, Title: "Method not allowed", Status: http.StatusMethodNotAllowed,
				Detail: r.Method + " is not a method of " + r.URL.Path + "; it takes " + allow})
		})
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h, pattern := byPath.Handler(r); pattern != "" {
			h.ServeHTTP(w, r)
			return
		}
		notRouted(w, r, "")
	})
}

// A custom method is a route whose path ends in a wildcard and a colon and
// an action: "POST /topics/{topic}:publish", the form of Azure's (and
// Google's) APIs. ServeMux cannot match it (a wildcard is a whole
// segment), so the routes of one path that differ only by their action
// share one ServeMux pattern, the path without the action, whose last
// wildcard then holds "name:action"; actions dispatches on what follows
// its last colon, the wildcard's value set to what precedes it. Each
// action stays a route of its own in the route table: its access, body
// and query parameters are its own, and so is its path in openapi.yaml.

// splitAction returns the ServeMux pattern of a custom method's route
// pattern, the name of its last wildcard and its action; ok is false for
// any other pattern.
func splitAction(pattern string) (muxPattern, wildcard, action string, ok bool) {
	i := strings.LastIndexByte(pattern, '/')
	last := pattern[i+1:]
	name, action, ok := strings.Cut(last, "}:")
	if !ok || !strings.HasPrefix(name, "{") || action == "" {
		return pattern, "", "", false
	}
	return pattern[:i+1] + name + "}", name[1:], action, true
}

// actions serves the custom methods of one ServeMux pattern.
type actions struct {
	wildcard string
	byName   map[string]http.Handler
	names    []string // for the 404's detail
}

func (a *actions) add(action string, h http.Handler) {
	if a.byName == nil {
		a.byName = map[string]http.Handler{}
	}
	a.byName[action] = h
	a.names = append(a.names, ":"+action)
}

// ServeHTTP runs the action's handler, or answers 404 naming the actions
// the path takes.
func (a *actions) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	seg := r.PathValue(a.wildcard)
	i := strings.LastIndexByte(seg, ':')
	if i < 0 || a.byName[seg[i+1:]] == nil {
		notRouted(w, r, " (this path ends in one of "+strings.Join(a.names, ", ")+")")
		return
	}
	r.SetPathValue(a.wildcard, seg[:i])
	a.byName[seg[i+1:]].ServeHTTP(w, r)
}
