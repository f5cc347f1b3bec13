package expr

import (
	"context"
	"errors"
	"fmt"

	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/interpreter"
)

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
// sorted, no HTML escaping: appendJSON), or skip when the result is null.
// It fails with an *EvalError; ctx ends it early (KindCancelled).
func (t *Transform) Apply(ctx context.Context, in *Input) (data []byte, skip bool, err error) {
	r, err := t.Eval(ctx, in)
	if err != nil || r.Skip() {
		return nil, r.Skip(), err
	}
	data, err = r.AppendJSON(make([]byte, 0, outputGuess))
	return data, false, err
}

// Eval evaluates the transform on in, as Apply does, but leaves the result
// to its caller to write (Result.AppendJSON): one who writes it into a
// larger buffer saves a copy. It fails with an *EvalError; ctx ends it
// early (KindCancelled).
func (t *Transform) Eval(ctx context.Context, in *Input) (Result, error) {
	out, _, err := t.prg.ContextEval(ctx, in.vars())
	if err != nil {
		return Result{}, evalError(err)
	}
	return Result{out}, nil
}

// Result is a transform's result (Transform.Eval). It may read its Input's
// payload, so it must be written before that changes.
type Result struct{ v ref.Val }

// Skip reports whether the result is null: the event is skipped.
func (r Result) Skip() bool {
	_, null := r.v.(types.Null)
	return null
}

// AppendJSON appends the result to b as JSON, as Apply writes it (the
// result must not be null: Skip). It fails with an *EvalError: the result
// is not JSON (KindResult), or its JSON is more than MaxOutputBytes
// (KindOutput; the writing stops soon after it passes that bound: a
// result is never written much beyond it, however large it is).
func (r Result) AppendJSON(b []byte) ([]byte, error) {
	start := len(b)
	b, err := appendJSON(b, r.v, start+MaxOutputBytes)
	switch {
	case errors.Is(err, errTooLong):
		return nil, &EvalError{Kind: KindOutput,
			Message: fmt.Sprintf("the transform's output is more than %d bytes", MaxOutputBytes)}
	case err != nil:
		return nil, &EvalError{Kind: KindResult, Message: err.Error()}
	}
	if n := len(b) - start; n > MaxOutputBytes {
		return nil, &EvalError{Kind: KindOutput,
			Message: fmt.Sprintf("the transform's output is %d bytes, more than %d", n, MaxOutputBytes)}
	}
	return b, nil
}

// outputGuess is the room a transform's output starts with, in bytes:
// enough for a chat message, so that most outputs need one allocation.
const outputGuess = 512

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
	out, det, err := f.prg.ContextEval(ctx, in.vars())
	cost := uint64(CostLimit)
	if det != nil && det.ActualCost() != nil {
		cost = *det.ActualCost()
	}
	if err != nil {
		return false, cost, evalError(err)
	}
	b, ok := out.(types.Bool)
	if !ok {
		return false, cost, &EvalError{Kind: KindResult,
			Message: fmt.Sprintf("the filter expression's result is %s, not a bool", out.Type().TypeName())}
	}
	return bool(b), cost, nil
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
