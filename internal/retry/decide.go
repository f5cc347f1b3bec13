package retry

import (
	"math"
	"strconv"
	"strings"
	"time"
)

// MaxRetryAfter caps how long a receiver's Retry-After can hold a retry back.
const MaxRetryAfter = time.Hour

// Decide returns the verdict on an attempt that has just ended:
//
//  1. a success code → Delivered;
//  2. a no-retry code → DeadLetter (ReasonNoRetry) at once;
//  3. attempt a.Number was the last allowed (MaxAttempts > 0) →
//     DeadLetter (ReasonMaxAttempts);
//  4. otherwise the next attempt's time: for an anchored schedule
//     t0 + offset of retry a.Number, t0 being a.FirstFailure (a.Now when
//     zero); for the others a.Now + the gap after attempt a.Number. Jitter
//     moves it by up to ± Jitter × the nominal gap, using rnd (which returns
//     values in [0,1); nil means no jitter). Then the minimums, measured
//     from a.Now, push it later if needed: the per-code minimum delay, and
//     the receiver's Retry-After (on 429 and 503 only, capped at
//     MaxRetryAfter). It is never before a.Now, so an anchored retry whose
//     time already passed (a late attempt) is due at once;
//  5. if the policy has a TTL and that time is not before a.Start + TTL,
//     the retry would come too late → DeadLetter (ReasonTTL) at once. This
//     matches Expired, which holds from the deadline itself on. A
//     Retry-After that would pass the TTL also ends the delivery.
//
// A zero a.Start is taken as a.Now, and a.Number below 1 as 1.
func (p Policy) Decide(a Attempt, rnd func() float64) Verdict {
	code := a.StatusCode
	if p.Success(code) {
		return Verdict{Kind: Delivered}
	}
	if p.noRetry(code) {
		return Verdict{Kind: DeadLetter, Reason: ReasonNoRetry}
	}
	n := max(a.Number, 1)
	if p.MaxAttempts > 0 && n >= p.MaxAttempts {
		return Verdict{Kind: DeadLetter, Reason: ReasonMaxAttempts}
	}

	now := a.Now
	gap := p.Schedule.gap(n)
	at := now.Add(gap)
	if p.Schedule.Anchored {
		t0 := a.FirstFailure
		if t0.IsZero() {
			t0 = now
		}
		at = t0.Add(p.Schedule.offset(n))
	}
	if p.Jitter > 0 && rnd != nil {
		r := min(max(rnd(), 0), 1)
		at = at.Add(time.Duration((2*r - 1) * p.Jitter * float64(gap)))
	}
	floor := p.minDelayFor(code)
	if a.RetryAfter > 0 && (code == 429 || code == 503) {
		floor = max(floor, min(a.RetryAfter, MaxRetryAfter))
	}
	if earliest := now.Add(floor); at.Before(earliest) {
		at = earliest
	}

	start := a.Start
	if start.IsZero() {
		start = now
	}
	if p.Expired(start, at) {
		return Verdict{Kind: DeadLetter, Reason: ReasonTTL}
	}
	return Verdict{Kind: Retry, At: at}
}

// gap is the nominal wait after failed attempt k (k ≥ 1) before retry k.
// For an anchored schedule it is the distance between retry k−1 and retry k
// (retry 0 being t0 itself).
func (s Schedule) gap(k int) time.Duration {
	k = max(k, 1)
	if s.Backoff != nil {
		b := s.Backoff
		g := float64(b.Initial) * math.Pow(b.Multiplier, float64(k-1))
		if math.IsInf(g, 0) || math.IsNaN(g) || g >= float64(b.Max) {
			return b.Max
		}
		return time.Duration(math.Round(g))
	}
	if len(s.Steps) == 0 {
		return 0
	}
	if s.Anchored {
		return s.offset(k) - s.offset(k-1)
	}
	return s.Steps[min(k, len(s.Steps))-1]
}

// offset is, for an anchored schedule, how long after t0 retry k happens
// (0 for k ≤ 0). Past the end of Steps the last gap repeats.
func (s Schedule) offset(k int) time.Duration {
	n := len(s.Steps)
	if k <= 0 || n == 0 {
		return 0
	}
	if k <= n {
		return s.Steps[k-1]
	}
	last := s.Steps[n-1]
	step := last
	if n > 1 {
		step = last - s.Steps[n-2]
	}
	return last + time.Duration(k-n)*step
}

// HTTP-date layouts accepted in Retry-After (RFC 9110 §5.6.7): the IMF-fixdate
// and the two obsolete forms.
var httpDateLayouts = []string{
	"Mon, 02 Jan 2006 15:04:05 GMT",
	"Monday, 02-Jan-06 15:04:05 GMT",
	"Mon Jan _2 15:04:05 2006",
}

// ParseRetryAfter reads a Retry-After header value as a delay from now:
// either a number of seconds ("120") or an HTTP date. A negative number or a
// date in the past gives 0; a value too large for a time.Duration is clamped
// to the largest one. It returns false for anything else (empty, fractions,
// garbage).
func ParseRetryAfter(h string, now time.Time) (time.Duration, bool) {
	h = strings.TrimSpace(h)
	if h == "" {
		return 0, false
	}
	if secs, err := strconv.ParseInt(h, 10, 64); err == nil || isRangeErr(err) {
		// On overflow ParseInt returns the largest or smallest int64.
		switch {
		case secs <= 0:
			return 0, true
		case secs > math.MaxInt64/int64(time.Second):
			return time.Duration(math.MaxInt64), true
		}
		return time.Duration(secs) * time.Second, true
	}
	for _, layout := range httpDateLayouts {
		if t, err := time.Parse(layout, h); err == nil {
			return max(t.Sub(now), 0), true
		}
	}
	return 0, false
}

func isRangeErr(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}
