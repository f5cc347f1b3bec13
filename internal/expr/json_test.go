package expr

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"testing"
	"time"

	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/common/types/traits"
)

// TestJSONAsEncodingJSON: appendJSON writes, byte for byte, what
// encoding/json (HTML escaping off) writes of the Go value of a CEL value
// (referenceJSON: how transforms were encoded before appendJSON), for
// values built directly, the results of lazyCases on the lazy and the
// eager Input, and the data of lazyEvent as a whole.
func TestJSONAsEncodingJSON(t *testing.T) {
	values := []ref.Val{types.NullValue, types.True, types.Int(-42), types.Uint(math.MaxUint64), types.Bytes("\x00\xff"),
		types.String("<&> \"\\ \x01\x1f\x7f é \u2028\u2029 \U0001F600 \xff\xfe end"), types.String(""),
		types.Timestamp{Time: time.Date(2024, 5, 1, 10, 0, 0, 5, time.FixedZone("x", 3600))}, types.Duration{Duration: 1500 * time.Millisecond}}
	for _, f := range []float64{0, math.Copysign(0, -1), 1, -1.5, 0.1, 1e20, 1e21, 123456789012345678, 1e-6, 1e-7, 9.99e-7, -2e-9, 5e-324, math.MaxFloat64, 1.0 / 3} {
		values = append(values, types.Double(f))
	}
	ctx := context.Background()
	for _, in := range []*Input{input(t, lazyEvent), eagerInput(t, lazyEvent)} {
		values = append(values, types.DefaultTypeAdapter.NativeToValue(in.data), types.DefaultTypeAdapter.NativeToValue(in.event))
		for _, src := range lazyCases {
			tr, err := CompileTransform(src)
			if err != nil {
				t.Fatal(err)
			}
			if out, _, err := tr.prg.ContextEval(ctx, in.vars()); err == nil {
				values = append(values, out)
			}
		}
	}
	for _, v := range values {
		want, wantErr := referenceJSON(v)
		got, err := appendJSON(nil, v, math.MaxInt)
		if string(got) != string(want) || fmt.Sprint(err) != fmt.Sprint(wantErr) {
			t.Errorf("%v:\n got  %s %v\n want %s %v", v, got, err, want, wantErr)
		}
	}
}

// TestJSONRefuses: what JSON cannot carry is refused with the message
// that names it, deep in a value too.
func TestJSONRefuses(t *testing.T) {
	for _, tc := range []struct {
		v    ref.Val
		want string
	}{
		{types.Double(math.NaN()), "the result holds NaN, which JSON cannot carry"},
		{types.NewDynamicList(types.DefaultTypeAdapter, []any{1, math.Inf(-1)}), "the result holds -Inf, which JSON cannot carry"},
		{types.NewDynamicMap(types.DefaultTypeAdapter, map[int]string{1: "a"}), "the result holds a map key of type int, not a string"},
		{types.NewDynamicMap(types.DefaultTypeAdapter, map[string]any{"a": map[string]any{"b": math.Inf(1)}}), "the result holds +Inf, which JSON cannot carry"},
		{types.IntType, "the result holds a type, which JSON cannot carry"},
		{types.OptionalOf(types.Int(1)), "the result holds an optional value, which JSON cannot carry: unwrap it with .value() or .orValue(…)"},
		{types.NewDynamicList(types.DefaultTypeAdapter, []ref.Val{types.OptionalNone}), "the result holds an optional value, which JSON cannot carry: unwrap it with .value() or .orValue(…)"},
		{input(t, `{"data":{"a":[1e400]}}`).data.(ref.Val), "the result holds +Inf, which JSON cannot carry"},
	} {
		if got, err := appendJSON(nil, tc.v, math.MaxInt); err == nil || err.Error() != tc.want {
			t.Errorf("%v: %s, %v; want %q", tc.v, got, err, tc.want)
		}
	}
}

// referenceJSON is v as encoding/json writes the Go value toJSON makes of
// it.
func referenceJSON(v ref.Val) ([]byte, error) {
	g, err := toJSON(v)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(g); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// toJSON is the CEL value v as a value encoding/json writes (the
// conversion transforms used before appendJSON).
func toJSON(v ref.Val) (any, error) {
	switch x := v.(type) {
	case types.Null:
		return nil, nil
	case types.Bool:
		return bool(x), nil
	case types.Int:
		return int64(x), nil
	case types.Uint:
		return uint64(x), nil
	case types.Double:
		f := float64(x)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, fmt.Errorf("the result holds %v, which JSON cannot carry", f)
		}
		return f, nil
	case types.String:
		return string(x), nil
	case types.Bytes:
		return base64.StdEncoding.EncodeToString(x), nil
	case types.Timestamp:
		return x.UTC().Format(time.RFC3339Nano), nil
	case types.Duration:
		return strconv.FormatFloat(x.Seconds(), 'f', -1, 64) + "s", nil
	case traits.Mapper:
		out := make(map[string]any)
		for it := x.Iterator(); it.HasNext() == types.True; {
			k := it.Next()
			e, err := toJSON(x.Get(k))
			if err != nil {
				return nil, err
			}
			out[string(k.(types.String))] = e
		}
		return out, nil
	case traits.Lister:
		out := make([]any, int(x.Size().(types.Int)))
		for i := range out {
			e, err := toJSON(x.Get(types.Int(i)))
			if err != nil {
				return nil, err
			}
			out[i] = e
		}
		return out, nil
	case *types.Optional:
		return nil, errors.New("the result holds an optional value, which JSON cannot carry: unwrap it with .value() or .orValue(…)")
	}
	return nil, fmt.Errorf("the result holds a %s, which JSON cannot carry", v.Type().TypeName())
}
