package main

import (
	"net/url"
	"regexp"
	"strings"
)

// apiRoute finds a route an API problem names in its detail: GET
// /v1/subscriptions?name=billing, GET /v1/deliveries, POST
// /v1/subscriptions/{id}/recover.
var apiRoute = regexp.MustCompile(`\b(GET|POST) /v1/([a-z-]+)(?:/\{id\}/([a-z-]+))?(?:\?name=([^\s;,)]*))?`)

// cliCommandFor is the herald command that does what the first API route
// named in detail does, or "" when detail names none the CLI has: a GET of
// a collection is its list verb (with --name for ?name=), a POST under an
// {id} the verb of that name.
func cliCommandFor(detail string) string {
	m := apiRoute.FindStringSubmatch(detail)
	if m == nil {
		return ""
	}
	method, collection, action, name := m[1], m[2], m[3], m[4]
	verbName := "list"
	if method == "POST" {
		verbName = action
	}
	if verbName == "" || !hasVerb(collection, verbName) {
		return ""
	}
	cmd := "herald " + collection + " " + verbName
	if action != "" {
		cmd += " ID"
	}
	if name != "" {
		if v, err := url.QueryUnescape(name); err == nil {
			cmd += " --name " + shellWord(v)
		}
	}
	return cmd
}

// hasVerb reports whether the CLI's resource of name has the verb.
func hasVerb(name, verb string) bool {
	for _, r := range resources {
		if r.name == name {
			for _, v := range r.verbs {
				if v.name == verb {
					return true
				}
			}
		}
	}
	return false
}

// shellWord is s as one shell word: as it is when it holds only letters,
// digits and ._-/:@, else quoted (shellQuote).
func shellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-/:@") == "" {
		return s
	}
	return shellQuote(s)
}
