package subscription

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/herald-events/herald/internal/filter"
	"github.com/herald-events/herald/internal/strictjson"
)

// MaxDynamicHeaderValue bounds the value a dynamic header takes from an
// event, in bytes: a longer value leaves the header out (it is not cut).
// It is maxHeaderValue, S13's bound on every custom header value.
const MaxDynamicHeaderValue = maxHeaderValue

// Why a dynamic header is left out of a push (DynamicHeader.Value): the
// reason is logged, never the value (it is the event's content).
const (
	OmitMissing   = "missing"    // the key is not in the event, or is null
	OmitNotScalar = "not_scalar" // the key holds an object or an array
	OmitTooLong   = "too_long"   // over MaxDynamicHeaderValue bytes
	OmitBadChars  = "bad_chars"  // control characters (but tab), or not a finite number
)

// DynamicHeader is one of a subscription's dynamic headers compiled: a
// header whose value each push takes from its event. Immutable, safe for
// concurrent use.
type DynamicHeader struct {
	// Name is the header's name as written.
	Name string
	key  *filter.Key
}

// CompileDynamicHeaders returns the subscription's dynamic headers
// compiled, in name order (nil for none). An error names the
// subscription and the field dynamic_headers.<Name>.
func (s *Subscription) CompileDynamicHeaders() ([]DynamicHeader, error) {
	h := s.Delivery.DynamicHeaders
	if len(h) == 0 {
		return nil, nil
	}
	out := make([]DynamicHeader, 0, len(h))
	for _, name := range sortedNames(h) {
		k, err := filter.CompileKey(h[name], strictjson.JoinPath("dynamic_headers", name))
		if err != nil {
			return nil, fmt.Errorf("subscription %s: %w", s.ID, err)
		}
		out = append(out, DynamicHeader{Name: name, key: k})
	}
	return out, nil
}

// checkDynamicHeaders checks a request's dynamic_headers: the names as
// checkHeaders checks them, each value a key in the advanced filters' key
// syntax (filter.CompileKey), problems naming dynamic_headers.<Name>.
func checkDynamicHeaders(h map[string]string) *strictjson.Error {
	return checkHeaderNames("dynamic_headers", h, func(f, key string) *strictjson.Error {
		if _, err := filter.CompileKey(key, f); err != nil {
			return badInput(err.Field, "%s", err.Detail)
		}
		return nil
	})
}

// Value returns the header's value in ev, or "" and why the header is
// left out (an Omit… reason). A string is sent as it is, spaces and tabs
// at either end trimmed; true and false as such; a number in decimal
// (exponent form from 1e21 up, as JSON writes it; filter.Event reads
// numbers as float64, so integers beyond 2^53 lose precision). Missing,
// null, objects and arrays leave the header out, as do a value over
// MaxDynamicHeaderValue bytes and one holding a control character other
// than tab (which HTTP does not allow in a header value). Bytes of UTF-8
// beyond ASCII are sent as they are.
func (d DynamicHeader) Value(ev *filter.Event) (string, string) {
	v, _ := d.key.Value(ev) // a missing key's value is nil
	var s string
	switch v := v.(type) {
	case nil:
		return "", OmitMissing
	case string:
		s = strings.Trim(v, " \t")
	case bool:
		s = strconv.FormatBool(v)
	case float64:
		if math.IsInf(v, 0) || math.IsNaN(v) {
			return "", OmitBadChars
		}
		format := byte('f')
		if math.Abs(v) >= 1e21 {
			format = 'e'
		}
		s = strconv.FormatFloat(v, format, -1, 64)
	default:
		return "", OmitNotScalar
	}
	if len(s) > MaxDynamicHeaderValue {
		return "", OmitTooLong
	}
	if _, bad := strictjson.FindControl(s, true); bad {
		return "", OmitBadChars
	}
	return s, ""
}
