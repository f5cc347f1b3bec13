package strictjson

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestLinesTag: a field tagged strictjson:"lines" takes strings with line
// breaks (LF, CR), within it too (a json.RawMessage decoded later); every
// other string, a raw message's and an interface's included, refuses
// them, naming its own path; other control characters are refused
// everywhere.
func TestLinesTag(t *testing.T) {
	type inner struct {
		CEL  *string `json:"cel" strictjson:"lines"`
		Name string  `json:"name"`
	}
	type outer struct {
		Expr  string          `json:"expr" strictjson:"lines"`
		Raw   json.RawMessage `json:"raw" strictjson:"lines"`
		Plain string          `json:"plain"`
		Other json.RawMessage `json:"other"`
		Any   any             `json:"any"`
		List  []string        `json:"list"`
	}
	for _, c := range []struct {
		body, field string // field "": accepted
	}{
		{`{"expr": "a &&\n b\r\n || c"}`, ""},
		{`{"raw": {"cel": "x\ny", "name": "n\nm"}}`, ""},
		{`{"plain": "a\nb"}`, "plain"},
		{`{"other": {"deep": ["ok", "a\nb"]}}`, "other.deep[1]"},
		{`{"any": {"k": "a\rb"}}`, "any.k"},
		{`{"list": ["a", "b\n"]}`, "list[1]"},
		{`{"expr": "a\u0000b"}`, "expr"},
		{`{"expr": "a\n\u001bb"}`, "expr"},
	} {
		var o outer
		err := Decode([]byte(c.body), "", &o)
		switch {
		case c.field == "" && err != nil:
			t.Errorf("%s: %v", c.body, err)
		case c.field != "" && (err == nil || err.Field != c.field || !strings.Contains(err.Detail, "control characters")):
			t.Errorf("%s: %v; want a problem naming %s", c.body, err, c.field)
		}
		if c.field != "" || o.Raw == nil {
			continue
		}
		var in inner
		err = Decode(o.Raw, "raw", &in)
		if err == nil || err.Field != "raw.name" {
			t.Errorf("the raw member decoded on its own: %v; want raw.name refused", err)
		}
	}
	var in struct {
		CEL *string `json:"cel" strictjson:"lines"`
	}
	if err := Decode([]byte(`{"cel": "x\ny"}`), "raw", &in); err != nil || *in.CEL != "x\ny" {
		t.Fatalf("%v %q", err, *in.CEL)
	}
}
