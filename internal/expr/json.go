package expr

import (
	"encoding/base64"
	"fmt"
	"math"
	"strconv"
	"time"

	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/common/types/traits"
)

// toJSON is the CEL value v as a value encoding/json writes: nil, bool,
// int64, uint64, float64, string, map[string]any or []any. Bytes become
// base64, timestamps RFC 3339 (UTC) and durations seconds with an "s"
// suffix (google.protobuf.Value's JSON mapping). It refuses a map key that
// is not a string, a NaN or infinite number, and any other type.
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
		return mapToJSON(x)
	case traits.Lister:
		return listToJSON(x)
	}
	return nil, fmt.Errorf("the result holds a %s, which JSON cannot carry", v.Type().TypeName())
}

// mapToJSON is the CEL map m as a map[string]any.
func mapToJSON(m traits.Mapper) (any, error) {
	out := make(map[string]any, int(m.Size().(types.Int)))
	for it := m.Iterator(); it.HasNext() == types.True; {
		k := it.Next()
		key, ok := k.(types.String)
		if !ok {
			return nil, fmt.Errorf("the result holds a map key of type %s, not a string", k.Type().TypeName())
		}
		v, err := toJSON(m.Get(k))
		if err != nil {
			return nil, err
		}
		out[string(key)] = v
	}
	return out, nil
}

// listToJSON is the CEL list l as a []any.
func listToJSON(l traits.Lister) (any, error) {
	n := int64(l.Size().(types.Int))
	out := make([]any, n)
	for i := range n {
		v, err := toJSON(l.Get(types.Int(i)))
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}
