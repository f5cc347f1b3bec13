package strictjson

import "testing"

// TestOptional: an Optional member tells absent, null and a value apart,
// and its value is decoded as strictly as any member, its problems named
// from the member's path.
func TestOptional(t *testing.T) {
	type inner struct {
		A string `json:"a"`
	}
	type change struct {
		W Optional[inner] `json:"w"`
	}
	for _, c := range []struct {
		body     string
		set, nil bool
	}{{`{}`, false, true}, {`{"w": null}`, true, true}, {`{"w": {"a": "x"}}`, true, false}} {
		var ch change
		if err := Decode([]byte(c.body), "", &ch); err != nil {
			t.Fatalf("%s: %v", c.body, err)
		}
		if ch.W.Set != c.set || (ch.W.Value == nil) != c.nil {
			t.Fatalf("%s: %+v", c.body, ch.W)
		}
		if !c.nil && ch.W.Value.A != "x" {
			t.Fatalf("%s: value %+v", c.body, *ch.W.Value)
		}
	}
	var ch change
	if err := Decode([]byte(`{"w": {"a": "x", "b": 1}}`), "", &ch); err == nil || err.Field != "w.b" {
		t.Fatalf("an unknown member inside: %v", err)
	}
	if got := (Optional[inner]{}).Or(&inner{A: "kept"}); got == nil || got.A != "kept" {
		t.Fatalf("absent Or: %+v", got)
	}
	if got := Remove[inner]().Or(&inner{A: "kept"}); got != nil {
		t.Fatalf("null Or: %+v", got)
	}
}
