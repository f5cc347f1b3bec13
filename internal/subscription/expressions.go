package subscription

import (
	"errors"
	"fmt"

	"github.com/herald-events/herald/internal/expr"
	"github.com/herald-events/herald/internal/strictjson"
)

// transformInput is the transform object of a create or update request.
type transformInput struct {
	CEL *string `json:"cel" strictjson:"lines"`
}

// applyExpressions applies the CEL expressions, transform.cel and
// filter_expression, each refused (naming it, with CEL's message and
// position) unless it compiles within expr's bounds. A filter_expression
// of "", a transform of null or a transform.cel of "" removes it.
func (in Input) applyExpressions(sub *Subscription) *strictjson.Error {
	if in.FilterExpression != nil {
		src := *in.FilterExpression
		if src != "" {
			if _, err := expr.CompileFilter(src); err != nil {
				return expressionProblem("filter_expression", err)
			}
		}
		sub.Filters.Expression = src
	}
	if in.Transform == nil {
		return nil
	}
	if string(in.Transform) == "null" {
		sub.Delivery.Transform = ""
		return nil
	}
	var ti transformInput
	if err := strictjson.Decode(in.Transform, "transform", &ti); err != nil {
		return err
	}
	if ti.CEL == nil {
		return badInput("transform.cel", "is required: the CEL expression whose result is the delivered data (\"\" or a null transform: none)")
	}
	if *ti.CEL == "" {
		sub.Delivery.Transform = ""
		return nil
	}
	if _, err := expr.CompileTransform(*ti.CEL); err != nil {
		return expressionProblem("transform.cel", err)
	}
	sub.Delivery.Transform = *ti.CEL
	return nil
}

// expressionProblem is the problem of field whose expression did not
// compile: the CompileError's position and message.
func expressionProblem(field string, err error) *strictjson.Error {
	var ce *expr.CompileError
	if errors.As(err, &ce) {
		return badInput(field, "%s", ce.Error())
	}
	return badInput(field, "does not compile: %s", err.Error())
}

// CompileExpressions compiles the subscription's transform and
// filter_expression (each nil when it has none): what internal/catalog
// keeps for each subscription version, so that no publish or attempt
// compiles. The create or update that stored them compiled them already;
// an error here means an expression this Herald no longer compiles.
func (s *Subscription) CompileExpressions() (*expr.Transform, *expr.Filter, error) {
	var t *expr.Transform
	var f *expr.Filter
	var err error
	if s.Delivery.Transform != "" {
		if t, err = expr.CompileTransform(s.Delivery.Transform); err != nil {
			return nil, nil, fmt.Errorf("subscription %s: transform.cel: %w", s.ID, err)
		}
	}
	if s.Filters.Expression != "" {
		if f, err = expr.CompileFilter(s.Filters.Expression); err != nil {
			return nil, nil, fmt.Errorf("subscription %s: filter_expression: %w", s.ID, err)
		}
	}
	return t, f, nil
}
