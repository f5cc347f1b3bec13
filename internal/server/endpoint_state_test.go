package server_test

import (
	"net/http"
	"slices"
	"testing"
)

// TestEndpointsByState: GET /v1/endpoints?state= lists only the account's
// endpoints in that state: one frozen by hand shows under frozen and not
// under enabled, the other the other way round; no state lists both.
func TestEndpointsByState(t *testing.T) {
	b := setup(t)
	rc := newReceiver(t, status(http.StatusOK))
	frozen := b.endpointOf(b.subscribe(map[string]any{"name": "a", "url": rc.URL + "/a"}))
	open := b.endpointOf(b.subscribe(map[string]any{"name": "b", "url": rc.URL + "/b"}))
	if code, raw := b.do("POST", "/v1/endpoints/"+frozen+"/freeze", nil, nil); code != http.StatusOK {
		t.Fatalf("freeze: %d %s", code, raw)
	}
	list := func(query string) []string {
		t.Helper()
		var page struct {
			Data []endpointRes `json:"data"`
		}
		if code, raw := b.do("GET", "/v1/endpoints"+query, nil, &page); code != http.StatusOK {
			t.Fatalf("GET /v1/endpoints%s: %d %s", query, code, raw)
		}
		var ids []string
		for _, e := range page.Data {
			ids = append(ids, e.ID)
		}
		slices.Sort(ids)
		return ids
	}
	both := []string{frozen, open}
	slices.Sort(both)
	for query, want := range map[string][]string{
		"?state=frozen": {frozen}, "?state=enabled": {open}, "?state=disabled": nil, "": both, "?state=": both,
	} {
		if got := list(query); !slices.Equal(got, want) {
			t.Errorf("GET /v1/endpoints%s listed %v, want %v", query, got, want)
		}
	}
}
