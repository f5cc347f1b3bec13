package retry

import "time"

// Preset names. DefaultPreset is used when a Spec names none.
const (
	PresetEventGrid       = "eventgrid"
	PresetWorkfront       = "workfront"
	PresetWorkfrontLegacy = "workfront-legacy"
	PresetPubSub          = "pubsub"
	PresetSAP             = "sap"
	PresetCustom          = "custom"

	DefaultPreset = PresetEventGrid
)

// maxOverrideTTL bounds a ttl override on presets whose service sets no TTL
// range (workfront, workfront-legacy, sap, custom): 30 days.
const maxOverrideTTL = 30 * 24 * time.Hour

// presetNames is the stable order Presets returns: the default first, then
// the other services' presets, custom last.
var presetNames = []string{
	PresetEventGrid, PresetWorkfront, PresetWorkfrontLegacy, PresetPubSub, PresetSAP, PresetCustom,
}

// Presets returns the preset names in a stable order, the default first.
func Presets() []string { return append([]string(nil), presetNames...) }

// Description returns a one-line description of a preset, or "" for an
// unknown name.
func Description(name string) string {
	d, ok := lookupPreset(name)
	if !ok {
		return ""
	}
	return d.description
}

// preset is a named policy: its defaults and the bounds of its overrides.
type preset struct {
	description string
	policy      Policy
	// minAttempts..maxAttempts bounds a max_attempts override; zeroAttempts
	// says whether 0 ("only the ttl bounds it") is accepted too.
	minAttempts, maxAttempts int
	zeroAttempts             bool
	// minTTL..maxTTL bounds a ttl override.
	minTTL, maxTTL time.Duration
}

// lookupPreset returns a fresh copy of a preset's definition (its slices and
// maps are never shared with an earlier result).
func lookupPreset(name string) (preset, bool) {
	switch name {
	case PresetEventGrid:
		return eventGrid(), true
	case PresetWorkfront:
		return workfront(), true
	case PresetWorkfrontLegacy:
		return workfrontLegacy(), true
	case PresetPubSub:
		return pubSub(), true
	case PresetSAP:
		return sap(), true
	case PresetCustom:
		return preset{
			description:  "your own delays or backoff; needs max_attempts or ttl",
			policy:       Policy{Preset: PresetCustom},
			minAttempts:  1,
			maxAttempts:  1000,
			zeroAttempts: true,
			minTTL:       1,
			maxTTL:       maxOverrideTTL,
		}, true
	}
	return preset{}, false
}

// eventGrid is Azure Event Grid's policy: gaps of 10 s, 30 s, 1 min,
// 5 min, 10 min, 30 min, 1 h, 3 h, 6 h, then 12 h repeating, with a small
// random jitter (±5 % of each gap); at most 30 attempts and a 24 h TTL,
// whichever comes first. Only 200..204 are success; 400, 401, 403, 404 and
// 413 are never retried. A retry after 408 waits at least 2 min, after 503
// at least 30 s, after any other failure at least 10 s; these minimums hold
// after jitter.
func eventGrid() preset {
	return preset{
		description: "Azure Event Grid: 10s, 30s, 1m, 5m, 10m, 30m, 1h, 3h, 6h, then every 12h; 30 attempts or 24h",
		policy: Policy{
			Preset:       PresetEventGrid,
			MaxAttempts:  30,
			TTL:          24 * time.Hour,
			Jitter:       0.05,
			SuccessCodes: []int{200, 201, 202, 203, 204},
			NoRetryCodes: []int{400, 401, 403, 404, 413},
			MinDelays:    map[int]time.Duration{408: 2 * time.Minute, 503: 30 * time.Second},
			MinDelay:     10 * time.Second,
			Schedule: Schedule{Steps: []time.Duration{
				10 * time.Second, 30 * time.Second, time.Minute, 5 * time.Minute,
				10 * time.Minute, 30 * time.Minute, time.Hour, 3 * time.Hour,
				6 * time.Hour, 12 * time.Hour,
			}},
		},
		minAttempts: 1, maxAttempts: 30,
		minTTL: time.Minute, maxTTL: 1440 * time.Minute,
	}
}

// workfrontUnit is the Workfront formula's factor: 84,800 ms.
const workfrontUnit = 84800 * time.Millisecond

// workfront is Adobe Workfront's policy: retry k (k = 1..11) at
// t0 + (2^k − 1) × 84.8 s, t0 being the end of the first failed attempt, so a
// late attempt does not push later ones back. Any 2xx is success and no code
// is exempt from retry.
//
// Workfront's documentation says retries go on "for up to 48 hours" but
// also places retry 11 at about 48.2 h (173,585.6 s). A hard 48 h TTL would
// forbid the retry the same document promises, so the preset has no TTL (0)
// and the 12-attempt cap (first attempt + 11 retries) ends it. A user who
// wants the 48 h bound can set ttl: "48h", which then ends the schedule
// before retry 11.
func workfront() preset {
	steps := make([]time.Duration, 11)
	for k := 1; k <= 11; k++ {
		steps[k-1] = time.Duration(1<<k-1) * workfrontUnit
	}
	return preset{
		description: "Adobe Workfront: retry k at (2^k-1)x84.8s after the first failure, 11 retries (~48.2h)",
		policy: Policy{
			Preset:      PresetWorkfront,
			MaxAttempts: 12,
			Schedule:    Schedule{Anchored: true, Steps: steps},
		},
		minAttempts: 1, maxAttempts: 12,
		minTTL: time.Minute, maxTTL: maxOverrideTTL,
	}
}

// workfrontLegacy is Workfront's older policy: a retry every 10 min
// after the previous failure, at most 12 retries (13 attempts, ≥ 2 h), then
// permanent failure. Any 2xx is success; no code is exempt.
func workfrontLegacy() preset {
	return preset{
		description: "Adobe Workfront (legacy): every 10m, 12 retries (2h)",
		policy: Policy{
			Preset:      PresetWorkfrontLegacy,
			MaxAttempts: 13,
			Schedule:    Schedule{Steps: []time.Duration{10 * time.Minute}},
		},
		minAttempts: 1, maxAttempts: 13,
		minTTL: time.Minute, maxTTL: maxOverrideTTL,
	}
}

// pubSub is Google Pub/Sub push as Eventarc uses it: exponential
// backoff from 10 s, doubling, capped at 600 s; 24 h retention (the TTL).
// By default only the TTL bounds it; max_attempts, when set, is Pub/Sub's
// dead-letter after N delivery attempts and must be 5..100 (0 keeps the
// default). Any 2xx is success; no code is exempt.
func pubSub() preset {
	return preset{
		description: "Google Pub/Sub / Eventarc: 10s doubling up to 600s, 24h retention",
		policy: Policy{
			Preset:   PresetPubSub,
			TTL:      24 * time.Hour,
			Schedule: Schedule{Backoff: &Exponential{Initial: 10 * time.Second, Multiplier: 2, Max: 600 * time.Second}},
		},
		minAttempts: 5, maxAttempts: 100, zeroAttempts: true,
		minTTL: 10 * time.Minute, maxTTL: 168 * time.Hour,
	}
}

// sap is SAP Open Connectors' retry mode: retry k (k = 1..5) at
// t0 + 2^(3k) s — 8 s, 64 s, 512 s, 4,096 s and 32,768 s (≈ 9.1 h) after the
// end of the first failed attempt; 6 attempts in all. Any 2xx is success.
// SAP's queue mode (deactivate and queue for pull) is not part of the
// policy: when the last retry fails the verdict is an ordinary dead-letter.
func sap() preset {
	steps := make([]time.Duration, 5)
	for k := 1; k <= 5; k++ {
		steps[k-1] = time.Duration(1<<(3*k)) * time.Second
	}
	return preset{
		description: "SAP Open Connectors: retry k at 2^(3k)s after the first failure (8s..32768s), 5 retries, then the subscription is deactivated and its events queued",
		policy: Policy{
			Preset:      PresetSAP,
			MaxAttempts: 6,
			Schedule:    Schedule{Anchored: true, Steps: steps},
			Then:        ThenQueue,
		},
		minAttempts: 1, maxAttempts: 6,
		minTTL: time.Minute, maxTTL: maxOverrideTTL,
	}
}
