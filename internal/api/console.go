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
func (s *Server) withConsole(api http.Handler) http.Handler {
	if s.Console == nil {
		return api
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p := r.URL.Path; p == "/console" || strings.HasPrefix(p, "/console/") {
			s.Console.ServeHTTP(w, r)
			return
		}
		api.ServeHTTP(w, r)
	})
}
