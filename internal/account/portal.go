package account

import (
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/herald-events/herald/internal/strictjson"
	"github.com/herald-events/herald/internal/subscription"
)

// MaxFrameAncestors bounds settings.portal_frame_ancestors.
const MaxFrameAncestors = 16

// maxOriginLen bounds one origin of settings.portal_frame_ancestors.
const maxOriginLen = 256

// applyPortal checks the portal settings in sets and writes them over s:
// portal_event_types as a subscription's event_types
// (subscription.CheckEventTypes), portal_frame_ancestors as origins
// (checkOrigin). [] empties a setting; nil keeps it.
func (in SettingsInput) applyPortal(s *Settings) *strictjson.Error {
	if in.PortalEventTypes != nil {
		ts := *in.PortalEventTypes
		if err := subscription.CheckEventTypes("settings.portal_event_types", ts); err != nil {
			return err
		}
		s.PortalEventTypes = emptyNil(ts)
	}
	if in.PortalFrameAncestors != nil {
		os := *in.PortalFrameAncestors
		if len(os) > MaxFrameAncestors {
			return strictjson.Errorf("settings.portal_frame_ancestors", "must list at most %d origins, got %d", MaxFrameAncestors, len(os))
		}
		for i, o := range os {
			field := fmt.Sprintf("settings.portal_frame_ancestors[%d]", i)
			if why := checkOrigin(o); why != "" {
				return strictjson.Errorf(field, "%s", why)
			}
			if slices.Contains(os[:i], o) {
				return strictjson.Errorf(field, "repeats the origin %q", o)
			}
		}
		s.PortalFrameAncestors = emptyNil(os)
	}
	return nil
}

// checkOrigin says what is wrong with o as an origin a CSP frame-ancestors
// source may name, "" when nothing: an http:// or https:// URL with a host
// (whose first label may be * for any subdomain) and an optional port,
// nothing else (no path, query, fragment or user), at most maxOriginLen
// bytes.
func checkOrigin(o string) string {
	const want = "must be an origin such as https://app.example.com (scheme, host and optional port; a first label * for any subdomain)"
	if len(o) > maxOriginLen {
		return fmt.Sprintf("must be at most %d bytes", maxOriginLen)
	}
	if strings.ContainsAny(o, " \t;,'\"\\") {
		return want + ", not " + fmt.Sprintf("%q", o)
	}
	u, err := url.Parse(o)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil ||
		(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" ||
		strings.Contains(strings.TrimPrefix(u.Hostname(), "*."), "*") {
		return want + ", not " + fmt.Sprintf("%q", o)
	}
	return ""
}

// PortalAllows reports whether the portal lets the account's
// subscriptions take the event types ts: any when PortalEventTypes is
// empty, else only those it lists (an empty ts, every type, is then
// refused); the first refused type is returned.
func (s Settings) PortalAllows(ts []string) (string, bool) {
	if len(s.PortalEventTypes) == 0 {
		return "", true
	}
	if len(ts) == 0 {
		return "every type", false
	}
	for _, t := range ts {
		if !slices.Contains(s.PortalEventTypes, t) {
			return t, false
		}
	}
	return "", true
}

// emptyNil is ts, or nil when it is empty, as a setting left unset.
func emptyNil(ts []string) []string {
	if len(ts) == 0 {
		return nil
	}
	return ts
}
