package catalog

import (
	"context"
	"errors"

	"github.com/herald-events/herald/internal/event"
	"github.com/herald-events/herald/internal/expr"
)

// Transformed is the stored event payload (event.Event.Marshal's output)
// as this subscription delivers it: with its transform's output as the
// data (event.WithData's payload, written in one buffer: the members kept
// walked through the index the transform's Input made, then the output
// written after them), or payload itself when it has no transform. skip
// says the transform gave null: the subscription does not take the event
// (its delivery ends filtered). A transform that fails on the event is an
// *expr.EvalError (KindCancelled when ctx ended first, which is not the
// event's fault); so is a payload the transform cannot read. The work is
// bounded by expr's cost limit and output bound.
func (e *Entry) Transformed(ctx context.Context, payload []byte) (out []byte, skip bool, err error) {
	if e.Transform == nil {
		return payload, false, nil
	}
	in, err := expr.NewInput(payload)
	if err != nil {
		return nil, false, &expr.EvalError{Kind: expr.KindEval, Message: err.Error()}
	}
	r, err := e.Transform.Eval(ctx, in)
	if err != nil || r.Skip() {
		return nil, r.Skip(), err
	}
	out, headErr := event.DataHead(payload, in, outputRoom)
	if out, err = r.AppendJSON(out); err != nil {
		return nil, false, err
	}
	if headErr != nil {
		return nil, false, &expr.EvalError{Kind: expr.KindEval, Message: headErr.Error()}
	}
	return append(out, '}'), false, nil
}

// outputRoom is the room Transformed's buffer has for the transform's
// output, in bytes: enough for a chat message; a larger output grows the
// buffer as it is written.
const outputRoom = 512

// TransformCancelled reports whether err, from Transformed, is its
// context's end rather than the transform failing on the event.
func TransformCancelled(err error) bool {
	var ee *expr.EvalError
	return errors.As(err, &ee) && ee.Kind == expr.KindCancelled
}
