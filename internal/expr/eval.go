package expr

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"cel.dev/cel-go/interpreter"
	jsonv2 "github.com/go-json-experiment/json"
)

// Input is one event as expressions read it (the package comment's event
// and data), built once and read by any number of evaluations, at once
// too: it is immutable.
type Input struct {
	vars map[string]any
}

// NewInput returns the Input of the event whose stored payload (a
// CloudEvent in structured-mode JSON) is payload. It fails when payload is
// not a JSON object or its data_base64 is not base64.
func NewInput(payload []byte) (*Input, error) {
	top, err := decodeTop(payload)
	if err != nil {
		return nil, fmt.Errorf("expr: the event is not a JSON object: %w", err)
	}
	attrs := make(map[string]any, len(top))
	var data any
	for name, v := range top {
		switch {
		case v == nil:
		case name == "data":
			data = v
		case name == "data_base64":
			b, err := decodeBase64(v)
			if err != nil {
				return nil, err
			}
			data = b
		default:
			attrs[name] = v
		}
	}
	return &Input{vars: map[string]any{"event": attrs, "data": data}}, nil
}

// decodeTop decodes payload, one JSON object, with every number a
// float64. It decodes with go-json-experiment/json (the implementation of
// the encoding/json/v2 proposal: about twice as fast as encoding/json on a
// 1 KB event, which is most of a transform's work; see
// BenchmarkTransformed in internal/catalog), and, when that refuses the
// payload (a number beyond float64's range, which it does not round),
// with encoding/json's json.Number rounded by numbersToFloat.
func decodeTop(payload []byte) (map[string]any, error) {
	var top map[string]any
	if jsonv2.Unmarshal(payload, &top) == nil && top != nil {
		return top, nil
	}
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.UseNumber()
	top = nil
	if err := dec.Decode(&top); err != nil {
		return nil, err
	}
	if top == nil {
		return nil, errors.New("null")
	}
	for name, v := range top {
		top[name] = numbersToFloat(v)
	}
	return top, nil
}

// decodeBase64 is the bytes of a data_base64 member.
func decodeBase64(v any) ([]byte, error) {
	s, ok := v.(string)
	if !ok {
		return nil, errors.New("expr: data_base64 is not a string")
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("expr: data_base64: %w", err)
	}
	return b, nil
}

// numbersToFloat replaces, in place, the json.Numbers in v by float64s
// (a magnitude beyond float64's range becomes ±Inf or 0).
func numbersToFloat(v any) any {
	switch x := v.(type) {
	case json.Number:
		f, _ := strconv.ParseFloat(string(x), 64)
		return f
	case map[string]any:
		for k, e := range x {
			x[k] = numbersToFloat(e)
		}
	case []any:
		for i, e := range x {
			x[i] = numbersToFloat(e)
		}
	}
	return v
}

// Why an evaluation failed (EvalError.Kind).
const (
	// KindEval: CEL's runtime error: a missing member or key, no overload
	// for the operands' types, a division by zero, a bad conversion.
	KindEval = "eval"
	// KindCost: the evaluation spent more than CostLimit.
	KindCost = "cost"
	// KindCancelled: the evaluation's context ended (not the expression's
	// fault: the caller may evaluate again).
	KindCancelled = "cancelled"
	// KindResult: the result is not what the expression must give: a
	// filter's not a bool, a transform's not JSON (a map with a non-string
	// key, a NaN or infinite number, a type).
	KindResult = "result"
	// KindOutput: the transform's output is more than MaxOutputBytes.
	KindOutput = "output"
)

// EvalError is an evaluation that failed.
type EvalError struct {
	// Kind is KindEval, KindCost, KindCancelled, KindResult or
	// KindOutput.
	Kind string
	// Message is CEL's message or Herald's.
	Message string
}

// Error is the message.
func (e *EvalError) Error() string { return e.Message }

// Transform is a compiled transform.
type Transform struct{ program }

// CompileTransform compiles a transform (a *CompileError when it does not).
func CompileTransform(src string) (*Transform, error) {
	p, err := compile(src, false)
	if err != nil {
		return nil, err
	}
	return &Transform{p}, nil
}

// Apply evaluates the transform on in: the delivered data as JSON (keys
// sorted, no HTML escaping), or skip when the result is null. It fails with
// an *EvalError; ctx ends it early (KindCancelled).
func (t *Transform) Apply(ctx context.Context, in *Input) (data []byte, skip bool, err error) {
	out, _, err := t.prg.ContextEval(ctx, in.vars)
	if err != nil {
		return nil, false, evalError(err)
	}
	v, err := toJSON(out)
	if err != nil {
		return nil, false, &EvalError{Kind: KindResult, Message: err.Error()}
	}
	if v == nil {
		return nil, true, nil
	}
	data, err = encode(v)
	if err != nil {
		return nil, false, err
	}
	return data, false, nil
}

// encode is v as JSON, at most MaxOutputBytes of it.
func encode(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, &EvalError{Kind: KindResult, Message: err.Error()}
	}
	out := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	if len(out) > MaxOutputBytes {
		return nil, &EvalError{Kind: KindOutput,
			Message: fmt.Sprintf("the transform's output is %d bytes, more than %d", len(out), MaxOutputBytes)}
	}
	return out, nil
}

// Filter is a compiled filter expression.
type Filter struct{ program }

// CompileFilter compiles a filter expression (a *CompileError when it does
// not, or when its result cannot be a bool).
func CompileFilter(src string) (*Filter, error) {
	p, err := compile(src, true)
	if err != nil {
		return nil, err
	}
	return &Filter{p}, nil
}

// Match evaluates the filter on in: whether the event matches, and the
// cel-go runtime cost the evaluation spent (what a caller charges to its
// matching budget; CostLimit at most). It fails with an *EvalError (a
// caller matching events counts that as no match); ctx ends it early
// (KindCancelled).
func (f *Filter) Match(ctx context.Context, in *Input) (bool, uint64, error) {
	out, det, err := f.prg.ContextEval(ctx, in.vars)
	cost := uint64(CostLimit)
	if det != nil && det.ActualCost() != nil {
		cost = *det.ActualCost()
	}
	if err != nil {
		return false, cost, evalError(err)
	}
	b, ok := out.Value().(bool)
	if !ok {
		return false, cost, &EvalError{Kind: KindResult,
			Message: fmt.Sprintf("the filter expression's result is %s, not a bool", out.Type().TypeName())}
	}
	return b, cost, nil
}

// evalError is the EvalError of an error of cel-go's ContextEval.
func evalError(err error) *EvalError {
	var cancelled interpreter.EvalCancelledError
	switch {
	case errors.As(err, &cancelled) && cancelled.Cause == interpreter.CostLimitExceeded:
		return &EvalError{Kind: KindCost, Message: cancelled.Message}
	case errors.As(err, &cancelled), errors.Is(err, interpreter.InterruptError{}):
		return &EvalError{Kind: KindCancelled, Message: err.Error()}
	}
	return &EvalError{Kind: KindEval, Message: err.Error()}
}
