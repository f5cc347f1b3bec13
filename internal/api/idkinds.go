package api

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/herald-events/herald/internal/account"
	"github.com/herald-events/herald/internal/ids"
	"github.com/herald-events/herald/internal/source"
)

// idKind is a kind of Herald's ids, for the answers to a value that cannot
// be one: a name where an id goes is refused saying so, and where to find
// the id.
type idKind struct {
	noun  string
	shape ids.Shape
	// also is an id of the kind besides those of the shape (acc_default).
	also string
	// find says where the ids are listed; byName, when set, is the list
	// that finds one by its name, the value appended (escaped).
	find, byName string
}

// The kinds of ids a path or a query parameter takes. Event ids are not
// among them: producers choose them.
var (
	accountIDs      = idKind{noun: "account", shape: ids.Account, also: account.DefaultID, find: "GET /v1/accounts lists them"}
	keyIDs          = idKind{noun: "key", shape: ids.Key, find: "GET /v1/keys lists them (an id names a key; it is not the key itself)"}
	subscriptionIDs = idKind{noun: "subscription", shape: ids.Subscription, find: "GET /v1/subscriptions lists them", byName: "/v1/subscriptions?name="}
	deliveryIDs     = idKind{noun: "delivery", shape: ids.Delivery, find: "GET /v1/deliveries lists them (?event_id= finds an event's)"}
	endpointIDs     = idKind{noun: "endpoint", shape: ids.Endpoint, find: "GET /v1/endpoints lists them, and a subscription's endpoint_id names its own"}
	jobIDs          = idKind{noun: "job", shape: ids.Job, find: "POST /v1/subscriptions/{id}/recover answers one"}
	sourceIDs       = idKind{noun: "source", shape: source.IDs, find: "GET /v1/sources lists them"}
)

// pathIDs are the kinds of the {id} of the paths under each collection
// ("/v1/subscriptions/{id}/..."): a route under one of them answers 404,
// without calling its handler, for an {id} that cannot be an id of the
// kind (checkPathID). The validation URL's id is not checked: its 404
// says nothing of what exists.
var pathIDs = map[string]*idKind{
	"accounts": &accountIDs, "keys": &keyIDs, "subscriptions": &subscriptionIDs,
	"deliveries": &deliveryIDs, "endpoints": &endpointIDs, "jobs": &jobIDs, "sources": &sourceIDs,
}

func (k *idKind) fits(id string) bool { return k.shape.Fits(id) || k.also != "" && id == k.also }

// article returns the noun with its indefinite article.
func (k *idKind) article() string {
	if strings.ContainsRune("aeiou", rune(k.noun[0])) {
		return "an " + k.noun
	}
	return "a " + k.noun
}

// why says, of a value v that is not an id of the kind, what the ids are
// like and where to find them: by name for a value that does not even start
// like one, when the kind's resources have names.
func (k *idKind) why(v string) string {
	d := "(" + k.noun + " ids are " + k.shape.String()
	if k.also != "" {
		d += ", or " + k.also
	}
	d += ")"
	if k.byName != "" && !strings.HasPrefix(v, k.shape.Prefix) {
		return d + "; to find " + k.article() + " by its name: GET " + k.byName + url.QueryEscape(v)
	}
	return d + "; " + k.find
}

// pathIDOf returns the kind of the {id} of a route pattern's path, or nil.
func pathIDOf(pattern string) *idKind {
	_, path, _ := strings.Cut(pattern, " ")
	collection, rest, ok := strings.Cut(strings.TrimPrefix(path, "/v1/"), "/")
	if !ok || !strings.HasPrefix(rest, "{id}") {
		return nil
	}
	return pathIDs[collection]
}

// checkPathID runs h for requests whose path's {id} can be an id of the
// kind the route's path takes (pathIDOf), and answers 404 saying why
// otherwise.
func checkPathID(rt route, h http.Handler) http.Handler {
	kind := pathIDOf(rt.pattern)
	if kind == nil {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if id := r.PathValue("id"); !kind.fits(id) {
			notFoundID(w, "", kind, id)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// notFoundID answers 404 for an id that cannot be one of the kind, naming
// field (a body member; "" for the path).
func notFoundID(w http.ResponseWriter, field string, kind *idKind, id string) {
	writeProblem(w, Problem{Type: probNotFound, Title: "Not found", Status: http.StatusNotFound, Field: field,
		Detail: "no " + kind.noun + " " + quoteHeader(id) + ": it is not " + kind.article() + " id " + kind.why(id)})
}
