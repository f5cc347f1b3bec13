package client

import (
	"encoding/json"
	"testing"
)

// TestSourceInputRemove: Remove's members are sent as null beside the
// others; a member both set and removed is refused.
func TestSourceInputRemove(t *testing.T) {
	format := "cloudevents"
	b, err := json.Marshal(SourceInput{Format: &format, Remove: []string{"wrap", "sasl"}})
	if err != nil || string(b) != `{"format":"cloudevents","sasl":null,"wrap":null}` {
		t.Fatalf("%s %v", b, err)
	}
	if b, err := json.Marshal(SourceInput{Format: &format}); err != nil || string(b) != `{"format":"cloudevents"}` {
		t.Fatalf("without Remove: %s %v", b, err)
	}
	if _, err := json.Marshal(SourceInput{Wrap: &SourceWrap{Type: "t", Source: "/s"}, Remove: []string{"wrap"}}); err == nil {
		t.Fatal("a wrap both set and removed was sent")
	}
}
