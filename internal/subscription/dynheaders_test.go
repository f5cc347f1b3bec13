package subscription_test

import (
	"strings"
	"testing"

	"github.com/herald-events/herald/internal/filter"
	"github.com/herald-events/herald/internal/subscription"
)

// TestDynamicHeaderValue: how an event's value becomes a header value, or
// why the header is left out.
func TestDynamicHeaderValue(t *testing.T) {
	long := strings.Repeat("x", subscription.MaxDynamicHeaderValue)
	cases := []struct {
		name, data, value, why string
	}{
		{"string trimmed", `{"v":"  a b\t"}`, "a b", ""},
		{"integer", `{"v":42}`, "42", ""},
		{"fraction", `{"v":-0.25}`, "-0.25", ""},
		{"large number", `{"v":1e21}`, "1e+21", ""},
		{"out of range", `{"v":1e400}`, "", subscription.OmitBadChars},
		{"boolean", `{"v":false}`, "false", ""},
		{"at the bound", `{"v":"` + long + `"}`, long, ""},
		{"over the bound", `{"v":"` + long + `x"}`, "", subscription.OmitTooLong},
		{"control character", `{"v":"a\nb"}`, "", subscription.OmitBadChars},
		{"tab inside", `{"v":"a\tb"}`, "a\tb", ""},
		{"null", `{"v":null}`, "", subscription.OmitMissing},
		{"missing", `{}`, "", subscription.OmitMissing},
		{"object", `{"v":{"a":1}}`, "", subscription.OmitNotScalar},
		{"array", `{"v":[1]}`, "", subscription.OmitNotScalar},
	}
	sub := subscription.Subscription{ID: "sub_1", Delivery: subscription.DeliveryOptions{DynamicHeaders: map[string]string{"X-V": "data.v"}}}
	dh, err := sub.CompileDynamicHeaders()
	if err != nil || len(dh) != 1 || dh[0].Name != "X-V" {
		t.Fatalf("compile: %v, %v", dh, err)
	}
	for _, c := range cases {
		ev := filter.NewEvent([]byte(`{"specversion":"1.0","id":"e","source":"/s","type":"t","data":` + c.data + `}`))
		if v, why := dh[0].Value(ev); v != c.value || why != c.why {
			t.Errorf("%s: %.20q, %q; want %.20q, %q", c.name, v, why, c.value, c.why)
		}
	}
	sub.Delivery.DynamicHeaders["X-V"] = "data."
	if _, err := sub.CompileDynamicHeaders(); err == nil || !strings.Contains(err.Error(), "dynamic_headers.X-V") {
		t.Fatalf("a bad stored key: %v", err)
	}
}
