package strictjson

import "testing"

// An unknown member that looks like a misspelt field names it.
func TestUnknownFieldNamesTheNearestField(t *testing.T) {
	var v struct {
		Name       string   `json:"name"`
		URL        string   `json:"url"`
		EventTypes []string `json:"event_types"`
		Timeout    string   `json:"timeout"`
	}
	const fields = " The fields here are name, url, event_types, timeout"
	for _, tc := range []struct{ body, field, detail string }{
		{`{"event_type":["a"]}`, "event_type", "unknown field; did you mean event_types?" + fields},
		{`{"eventTypes":["a"]}`, "eventTypes", "unknown field; did you mean event_types?" + fields},
		{`{"timout":"1s"}`, "timout", "unknown field; did you mean timeout?" + fields},
		{`{"subscription_name":"a"}`, "subscription_name", "unknown field; did you mean name?" + fields},
		{`{"URL":"a"}`, "URL", "unknown field; member names are case-sensitive: did you mean url?"},
		{`{"colour":"red"}`, "colour", "unknown field; the fields here are name, url, event_types, timeout"},
		{`{"uri":"a"}`, "uri", "unknown field; the fields here are name, url, event_types, timeout"},
	} {
		err := Decode([]byte(tc.body), "", &v)
		if err == nil || err.Field != tc.field || err.Detail != tc.detail {
			t.Errorf("%s: %v\nwant %s: %s", tc.body, err, tc.field, tc.detail)
		}
	}
}
