package api

import (
	"net/http"
	"strings"
)

// withConsole sends the requests of /console and the paths under
// /console/ to s.Console, and the others to api. The console's requests
// are logged as the API's are (logRequests), but no check of the API's
// applies to them (keys, content types, query rules, clean paths): the
// console has its own (internal/console). Without a Console, api serves
// every path, as before.
//
// The portal (s.Portal) is served so under /portal and /portal/.
func (s *Server) withConsole(api http.Handler) http.Handler {
	if s.Console == nil && s.Portal == nil {
		return api
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch p := r.URL.Path; {
		case s.Console != nil && (p == "/console" || strings.HasPrefix(p, "/console/")):
			s.Console.ServeHTTP(w, r)
		case s.Portal != nil && (p == "/portal" || strings.HasPrefix(p, "/portal/")):
			s.Portal.ServeHTTP(w, r)
		default:
			api.ServeHTTP(w, r)
		}
	})
}
