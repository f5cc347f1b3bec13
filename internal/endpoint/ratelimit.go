package endpoint

import (
	"encoding/json"
	"math"
	"time"

	"github.com/herald-events/herald/internal/strictjson"
)

// RateLimit is an endpoint's rate limit: a token bucket that refills at
// PerSecond tokens a second up to Burst, from which every request sent to
// the endpoint takes one (a batch is one request). All the nodes sending to
// the endpoint share it (internal/scheduling/rate.go).
type RateLimit struct {
	PerSecond float64 `json:"per_second"`
	Burst     int     `json:"burst"`
}

// The bounds of a rate limit's fields.
const (
	MinPerSecond = 0.01
	MaxPerSecond = 10_000
	MaxBurst     = 10_000
)

// Interval is the time the bucket takes to refill one token.
func (r RateLimit) Interval() time.Duration {
	return time.Duration(float64(time.Second) / r.PerSecond)
}

// Lease is the most tokens one node takes from the shared bucket at once:
// a tenth of a second's worth, at least one, at most Burst, so that no node
// hoards what the others could send.
func (r RateLimit) Lease() int {
	return max(1, min(r.Burst, int(r.PerSecond/10)))
}

// Input is a PATCH of an endpoint (PATCH /v1/endpoints/{id}), decoded
// strictly (strictjson.Decode). An absent member leaves its field as it is.
type Input struct {
	// RateLimit: an object sets the limit, null removes it.
	RateLimit json.RawMessage `json:"rate_limit"`
}

// rateLimitInput is a rate_limit object as sent: both members required.
type rateLimitInput struct {
	PerSecond *float64 `json:"per_second"`
	Burst     *int     `json:"burst"`
}

// Apply checks the input and applies it to e. A problem names the field
// (rate_limit.per_second), and e is then left as it was.
func (in Input) Apply(e *Endpoint) *strictjson.Error {
	if in.RateLimit == nil {
		return nil
	}
	if string(in.RateLimit) == "null" {
		e.RateLimit = nil
		return nil
	}
	var r rateLimitInput
	if err := strictjson.Decode(in.RateLimit, "rate_limit", &r); err != nil {
		return err
	}
	switch {
	case r.PerSecond == nil:
		return strictjson.Errorf("rate_limit.per_second", "is required: the requests a second the endpoint takes (%v to %v)", MinPerSecond, MaxPerSecond)
	case r.Burst == nil:
		return strictjson.Errorf("rate_limit.burst", "is required: the requests that may go at once after a pause (1 to %d)", MaxBurst)
	}
	rl := RateLimit{PerSecond: *r.PerSecond, Burst: *r.Burst}
	if err := rl.Check("rate_limit"); err != nil {
		return err
	}
	e.RateLimit = &rl
	return nil
}

// Check reports the first field of r out of its bounds, under path.
func (r RateLimit) Check(path string) *strictjson.Error {
	switch {
	case math.IsNaN(r.PerSecond) || r.PerSecond < MinPerSecond || r.PerSecond > MaxPerSecond:
		return strictjson.Errorf(path+".per_second", "must be from %v to %v requests a second, not %v", MinPerSecond, MaxPerSecond, r.PerSecond)
	case r.Burst < 1 || r.Burst > MaxBurst:
		return strictjson.Errorf(path+".burst", "must be from 1 to %d requests, not %d", MaxBurst, r.Burst)
	}
	return nil
}
