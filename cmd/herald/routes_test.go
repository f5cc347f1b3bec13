package main

import "testing"

// TestCLICommandFor: the routes the API's details name, as herald
// commands; a route the CLI has no command for, none.
func TestCLICommandFor(t *testing.T) {
	for detail, want := range map[string]string{
		`no subscription "billing": to find a subscription by its name: GET /v1/subscriptions?name=billing`:      "herald subscriptions list --name billing",
		"to find a subscription by its name: GET /v1/subscriptions?name=my+billing":                              "herald subscriptions list --name 'my billing'",
		"(delivery ids are dlv_ and 26 characters); GET /v1/deliveries lists them (?event_id= finds an event's)": "herald deliveries list",
		"POST /v1/subscriptions/{id}/recover answers one":                                                        "herald subscriptions recover ID",
		"GET /v1/nothing lists them": "",
		"must be a number":           "",
	} {
		if got := cliCommandFor(detail); got != want {
			t.Errorf("cliCommandFor(%q) = %q, want %q", detail, got, want)
		}
	}
}
