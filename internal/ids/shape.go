package ids

import (
	"strconv"
	"strings"
)

// Shape is the form of one kind of Herald's ids: Prefix followed by Len
// characters of Alphabet. Herald makes every id of a kind in its shape, so
// a value of another form cannot name one (a name in an id's place, say).
type Shape struct {
	Prefix string
	Len    int
}

// The shapes of the ids Herald makes. Endpoint ids are not ULIDs but
// keyed hashes of the account and the URL (store.EndpointKey), cut to 20
// characters. Besides the shape, an account id may be account.DefaultID.
var (
	Account      = Shape{Prefix: "acc_", Len: 26}
	Key          = Shape{Prefix: "key_", Len: 26}
	Subscription = Shape{Prefix: "sub_", Len: 26}
	Delivery     = Shape{Prefix: "dlv_", Len: 26}
	Endpoint     = Shape{Prefix: "ep_", Len: 20}
	Job          = Shape{Prefix: "job_", Len: 26}
)

// Fits reports whether id has the shape.
func (s Shape) Fits(id string) bool {
	rest, ok := strings.CutPrefix(id, s.Prefix)
	return ok && len(rest) == s.Len && strings.Trim(rest, Alphabet) == ""
}

// String describes the shape for people: "sub_ and 26 characters".
func (s Shape) String() string {
	return s.Prefix + " and " + strconv.Itoa(s.Len) + " characters"
}
