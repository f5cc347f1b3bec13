package catalog

import (
	"context"
	"testing"

	"github.com/herald-events/herald/internal/event"
	"github.com/herald-events/herald/internal/expr"
	"github.com/herald-events/herald/internal/subscription"
)

// TestTransformedRebuildsAsWithData: the payload a transform gives is
// event.WithData's of the stored payload and the transform's output,
// whether its members are walked through the Input's index (the lazy
// path) or read again from the payload (one with an escaped member name,
// which is decoded eagerly): data, data_base64, datacontenttype and
// dataschema replaced, every other member kept as written, in its order.
func TestTransformedRebuildsAsWithData(t *testing.T) {
	e, err := NewEntry(subscription.Subscription{ID: "sub_1", State: subscription.StateActive,
		Delivery: subscription.DeliveryOptions{Transform: `{"n": data.n}`}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		payload string
		indexed bool
	}{
		{`{"specversion":"1.0", "id":"e1","source":"/s","type":"t","datacontenttype":"application/json","dataschema":"https://x/s","ext":{"a": [1, 2]},"data":{"n":1}}`, true},
		{`{"specversion":"1.0","id":"e2","source":"/s","type":"t","x\u0065xt":"escaped","data":{"n":2},"last":true}`, false},
	} {
		in, err := expr.NewInput([]byte(c.payload))
		if err != nil {
			t.Fatal(err)
		}
		if indexed := in.Members() >= 0; indexed != c.indexed {
			t.Fatalf("%s: indexed %v, want %v", c.payload, indexed, c.indexed)
		}
		got, skip, err := e.Transformed(context.Background(), []byte(c.payload))
		if err != nil || skip {
			t.Fatalf("%s: %v %v", c.payload, skip, err)
		}
		data, _, err := e.Transform.Apply(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		want, err := event.WithData([]byte(c.payload), data)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Fatalf("%s:\ngot  %s\nwant %s", c.payload, got, want)
		}
	}
}
