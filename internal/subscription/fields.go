package subscription

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/herald-events/herald/internal/destination"
	"github.com/herald-events/herald/internal/event"
	"github.com/herald-events/herald/internal/redact"
	"github.com/herald-events/herald/internal/strictjson"
)

// Limits on a subscription's fields.
const (
	// MaxNameLen bounds the name of a subscription, and of an account and
	// an API key (package account), in bytes.
	MaxNameLen       = 200
	maxURLLen        = 2048
	maxEventTypes    = 100
	maxEventTypeLen  = event.MaxTypeLen // every type a subscription lists can be published
	maxSubjectFilter = 1024
	maxHeaders       = 10   // Event Grid's limit on custom delivery headers
	maxHeaderName    = 256  // bytes
	maxHeaderValue   = 4096 // Event Grid's limit on a header value, in bytes
	minTimeout       = 100 * time.Millisecond
	maxTimeout       = 5 * time.Minute
	// DefaultTimeout is the timeout of a subscription that names none
	// (Event Grid's response timeout).
	DefaultTimeout = 30 * time.Second
	// Batch bounds (Event Grid's).
	maxEventsPerBatch   = 5000
	maxPreferredBatchKB = 1024
)

// reservedHeaders are the header names a subscription's custom headers may
// not use, lowercased, with the reason: the ones Herald sets on every
// attempt, and the ones that belong to the connection or that the HTTP
// client manages (a custom value would be dropped, break the request, or
// lie about the body).
var reservedHeaders = map[string]string{
	"content-type": "is set by Herald", "user-agent": "is set by Herald",

	"connection": "is a hop-by-hop header", "keep-alive": "is a hop-by-hop header",
	"proxy-connection": "is a hop-by-hop header", "proxy-authenticate": "is a hop-by-hop header",
	"proxy-authorization": "is a hop-by-hop header", "te": "is a hop-by-hop header",
	"trailer": "is a hop-by-hop header", "transfer-encoding": "is a hop-by-hop header",
	"upgrade": "is a hop-by-hop header", "http2-settings": "is a hop-by-hop header",

	"host": "is set by the HTTP client from the url", "content-length": "is set by the HTTP client from the body",
	"expect":           "is managed by the HTTP client",
	"content-encoding": "would misdescribe the body, which Herald sends unencoded",
}

// reservedHeaderPrefixes start header names Herald sets or will set.
var reservedHeaderPrefixes = []string{"webhook-", "herald-", "ce-"}

// badInput is the problem of one field of an Input.
func badInput(field, format string, args ...any) *strictjson.Error {
	return strictjson.Errorf(field, format, args...)
}

// checkURL checks a delivery URL in field (url, dead_letter_url): an
// absolute http or https URL with a host an attempt can connect to, a port
// in range and no fragment. A URL written without its scheme
// ("localhost:9000/hook") is refused with the URL as it should be written.
func checkURL(field, s string) *strictjson.Error {
	if len(s) > maxURLLen {
		return badInput(field, "must be at most %d bytes, got %d", maxURLLen, len(s))
	}
	u, err := url.Parse(s)
	if missingScheme(s, u, err) {
		return badInput(field, "needs http:// or https:// at its start: %s", withSchemes(s))
	}
	if err != nil {
		return badInput(field, "is not a URL: %s", parseProblem(err))
	}
	switch {
	case !u.IsAbs() || (u.Scheme != "http" && u.Scheme != "https") || u.Opaque != "":
		return badInput(field, "must be an absolute http or https URL, such as https://example.com/hook")
	case strings.Contains(s, "#"):
		return badInput(field, "must not have a fragment (#...)")
	case u.Hostname() == "":
		return badInput(field, "must name a host, such as https://example.com/hook")
	}
	if port := u.Port(); port != "" || strings.HasSuffix(u.Host, ":") {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return badInput(field, "the port must be a number from 1 to 65535, got %q", port)
		}
	}
	if msg := checkHost(u.Hostname()); msg != "" {
		return badInput(field, "%s", msg)
	}
	return nil
}

// sentURL checks a URL a request sent in field (checkURL) in place of
// stored, the field's stored URL ("" for none), and returns the URL to
// store: stored when the request sent it as Herald shows it (keepsURL), so
// that a URL sent back as an answer or page showed it keeps its hidden
// password or token. Any other URL that shows redact.Mask where a secret
// goes is refused: it holds the mask, not the secret.
func sentURL(field, s, stored string) (string, *strictjson.Error) {
	if err := checkURL(field, s); err != nil {
		return "", err
	}
	if stored != "" && keepsURL(s, stored) {
		return stored, nil
	}
	if redact.Masked(s) {
		return "", badInput(field, "shows %s where a password or token goes, as Herald shows a URL's secret: send the URL with its secret "+
			"(or the stored URL exactly as Herald shows it, to keep it)", redact.Mask)
	}
	return s, nil
}

// keepsURL reports whether a URL sent as s names the stored URL: s is
// stored, or stored as Herald shows it (redact.URL).
func keepsURL(s, stored string) bool { return s == stored || s == redact.URL(stored) }

// missingScheme reports whether s (url.Parse gave u, err) is a URL written
// without its scheme: it has no "://" and names no scheme, or what
// url.Parse takes for one is a host before a port ("localhost:9000/hook",
// which url.Parse refuses because "first path segment in URL cannot
// contain colon"; "example.com:443"). The empty string and a path ("/hook")
// are not: they name no host either.
func missingScheme(s string, u *url.URL, err error) bool {
	if s == "" || strings.Contains(s, "://") || strings.HasPrefix(s, "/") && !strings.HasPrefix(s, "//") {
		return false
	}
	return err != nil || u.Scheme == "" || u.Opaque != "" && u.Opaque[0] >= '0' && u.Opaque[0] <= '9'
}

// withSchemes writes s (a URL without its scheme) with http:// and with
// https://, quoted, its password hidden (redact.URL) and shortened past
// strictjson.MaxFieldName bytes.
func withSchemes(s string) string {
	s = strings.TrimPrefix(s, "//")
	quote := func(scheme string) string {
		return strconv.Quote(strictjson.Shorten(redact.URL(scheme + s)))
	}
	return quote("http://") + " or " + quote("https://")
}

// parseProblem says what url.Parse found wrong, without the URL it
// quotes; a scheme it cannot read ("1http://host") is said plainly.
func parseProblem(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	if msg := err.Error(); msg == "missing protocol scheme" || msg == "first path segment in URL cannot contain colon" {
		return "its scheme is not valid: it must begin with http:// or https://, such as https://example.com/hook"
	}
	return err.Error()
}

// checkHost returns why host (a URL's hostname, without brackets or port)
// cannot be connected to, or "".
func checkHost(host string) string {
	if ip, err := netip.ParseAddr(host); err == nil {
		ip = ip.Unmap()
		switch {
		case ip.IsUnspecified():
			return "the host " + strconv.Quote(host) + " is the unspecified address, which no connection can be made to"
		case ip.IsMulticast() || ip == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
			return "the host " + strconv.Quote(host) + " is a broadcast or multicast address, which no connection can be made to"
		}
		return ""
	}
	name := strings.TrimSuffix(host, ".")
	if len(name) > 253 {
		return "the host name must be at most 253 bytes"
	}
	labels := strings.Split(name, ".")
	for _, l := range labels {
		if l == "" || len(l) > 63 {
			return "the host name " + strconv.Quote(host) + " is not valid: each dot-separated part must be 1 to 63 bytes"
		}
		for _, r := range l {
			if !(r == '-' || r == '_' || r < utf8.RuneSelf && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') ||
				r >= utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r))) {
				return fmt.Sprintf("the host name %q is not valid: it may hold letters, digits, '-' and '_', not %q", host, r)
			}
		}
	}
	// A name whose last part is a number is an IPv4 address in a short or
	// non-decimal form ("0", "127.1", "0x7f.1"), which resolvers read in
	// different ways; no top-level domain is numeric.
	last := strings.ToLower(labels[len(labels)-1])
	if strings.Trim(last, "0123456789") == "" || strings.HasPrefix(last, "0x") && strings.Trim(last[2:], "0123456789abcdef") == "" {
		return "the host " + strconv.Quote(host) + " is not a valid IPv4 address: write one as four decimal numbers such as 192.0.2.1"
	}
	if why := destination.NeverResolves(host); why != "" {
		return "the host " + strconv.Quote(host) + " " + why + ": no connection can be made to it"
	}
	return ""
}

func checkEventTypes(ts []string) *strictjson.Error { return CheckEventTypes("event_types", ts) }

// CheckEventTypes checks a list of event types named field (a
// subscription's event_types, an account's settings.portal_event_types):
// at most maxEventTypes, each non-empty text of at most maxEventTypeLen
// bytes, none twice. A problem names the entry, as field[i].
func CheckEventTypes(field string, ts []string) *strictjson.Error {
	if len(ts) > maxEventTypes {
		return badInput(field, "must list at most %d event types, got %d", maxEventTypes, len(ts))
	}
	seen := make(map[string]bool, len(ts))
	for i, t := range ts {
		f := fmt.Sprintf("%s[%d]", field, i)
		if err := strictjson.CheckText(f, t, maxEventTypeLen, true); err != nil {
			return err
		}
		if seen[t] {
			return badInput(f, "repeats the event type %q", t)
		}
		seen[t] = true
	}
	return nil
}

func checkTimeout(d time.Duration) *strictjson.Error {
	if d < minTimeout || d > maxTimeout {
		return badInput("timeout", "must be from %s to %s, got %s", minTimeout, maxTimeout, d)
	}
	return nil
}

// checkHeaders checks a subscription's custom headers: at most maxHeaders;
// names HTTP tokens of at most maxHeaderName bytes, none reserved and no two
// the same in any letter case; values HTTP field values (visible
// characters, spaces and tabs, not at either end) of at most
// maxHeaderValue bytes. Problems name the field "<field>.<Name>" (field:
// headers or secret_headers); names are
// visited in order, so the same input always reports the same field.
func checkHeaders(field string, h map[string]string) *strictjson.Error {
	return checkHeaderNames(field, h, checkHeaderValue)
}

// checkHeaderValue checks a custom header's value v, the field f's.
func checkHeaderValue(f, v string) *strictjson.Error {
	switch {
	case len(v) > maxHeaderValue:
		return badInput(f, "a header value must be at most %d bytes, got %d", maxHeaderValue, len(v))
	case strings.Trim(v, " \t") != v:
		return badInput(f, "a header value must not begin or end with a space or tab")
	}
	if r, ok := strictjson.FindControl(v, true); ok {
		return badInput(f, "a header value must not contain control characters other than tab (found %U)", r)
	}
	return nil
}

// checkHeaderNames checks the names of a header map named field (at most
// maxHeaders, the rules of checkHeaders), in sorted order, and each value
// with checkValue, which gets the field "<field>.<Name>".
func checkHeaderNames(field string, h map[string]string, checkValue func(f, v string) *strictjson.Error) *strictjson.Error {
	if len(h) > maxHeaders {
		return badInput(field, "must hold at most %d headers, got %d", maxHeaders, len(h))
	}
	seen := make(map[string]string, len(h))
	for _, k := range sortedNames(h) {
		f := strictjson.JoinPath(field, k)
		lk := strings.ToLower(k)
		switch {
		case k == "":
			return badInput(f, "a header name must not be empty")
		case len(k) > maxHeaderName:
			return badInput(f, "a header name must be at most %d bytes, got %d", maxHeaderName, len(k))
		case !validHeaderName(k):
			return badInput(f, "a header name may hold only letters, digits and !#$%%&'*+-.^_`|~")
		case seen[lk] != "":
			return badInput(f, "repeats the header %s: header names are case-insensitive", seen[lk])
		case reservedHeaders[lk] != "":
			return badInput(f, "cannot be set: %s %s", k, reservedHeaders[lk])
		case hasAnyPrefix(lk, reservedHeaderPrefixes):
			return badInput(f, "cannot be set: names starting with %s are set by Herald", lk[:strings.IndexByte(lk, '-')+1])
		}
		if err := checkValue(f, h[k]); err != nil {
			return err
		}
		seen[lk] = k
	}
	return nil
}

// sortedNames returns h's names in order.
func sortedNames(h map[string]string) []string {
	names := make([]string, 0, len(h))
	for k := range h {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

// checkHeaderMaps checks sub's headers, secret headers and dynamic
// headers together: at most maxHeaders in all, and no name in two of them
// (names are case-insensitive). The count's problem names field (the map
// the request sent: see Input.sentHeaderField); a name in two maps names
// the later one's entry (secret_headers.<Name>, dynamic_headers.<Name>).
func checkHeaderMaps(sub *Subscription, field string) *strictjson.Error {
	maps := []struct {
		field string
		h     map[string]string
	}{{"headers", sub.Headers}, {"secret_headers", sub.SecretHeaders}, {"dynamic_headers", sub.Delivery.DynamicHeaders}}
	if n := len(sub.Headers) + len(sub.SecretHeaders) + len(sub.Delivery.DynamicHeaders); n > maxHeaders {
		return badInput(field, "headers, secret_headers and dynamic_headers must hold at most %d headers in all, got %d", maxHeaders, n)
	}
	type place struct{ field, name string }
	seen := make(map[string]place, maxHeaders)
	for _, m := range maps {
		for _, k := range sortedNames(m.h) {
			if p, ok := seen[strings.ToLower(k)]; ok {
				return badInput(strictjson.JoinPath(m.field, k), "is also in %s (as %s): a header is in one of headers, secret_headers and dynamic_headers", p.field, p.name)
			}
		}
		for _, k := range sortedNames(m.h) {
			seen[strings.ToLower(k)] = place{m.field, k}
		}
	}
	return nil
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// validHeaderName reports whether s is an HTTP token (RFC 9110).
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}
