package retry

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestResolveTable runs testdata/resolve.txt: each line is a spec and either
// "ok" or the field Resolve must name.
func TestResolveTable(t *testing.T) {
	f, err := os.Open("testdata/resolve.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	cases := 0
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		in, want, ok := strings.Cut(text, "=>")
		if !ok {
			t.Fatalf("resolve.txt:%d: no \"=>\"", line)
		}
		in, want = strings.TrimSpace(in), strings.TrimSpace(want)
		cases++
		var s Spec
		dec := json.NewDecoder(strings.NewReader(in))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&s); err != nil {
			t.Fatalf("resolve.txt:%d: %s: %v", line, in, err)
		}
		_, err := Resolve(s)
		switch {
		case want == "ok" && err != nil:
			t.Errorf("resolve.txt:%d: %s: unexpected error %v", line, in, err)
		case want == "ok":
		case err == nil:
			t.Errorf("resolve.txt:%d: %s: accepted, want error on %q", line, in, want)
		default:
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Errorf("resolve.txt:%d: %s: error %T is not *FieldError", line, in, err)
			} else if fe.Field != want {
				t.Errorf("resolve.txt:%d: %s: field %q (%v), want %q", line, in, fe.Field, err, want)
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if cases < 50 {
		t.Fatalf("only %d cases read", cases)
	}
}

func TestResolveDefaults(t *testing.T) {
	p, err := Resolve(Spec{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Preset != "eventgrid" || p.MaxAttempts != 30 || p.TTL != 24*time.Hour || p.Jitter != 0.05 {
		t.Errorf("default policy = %+v, want eventgrid with 30 attempts, 24h, ±5%%", p)
	}
	tests := []struct {
		name     string
		attempts int
		ttl      time.Duration
	}{
		{"workfront", 12, 0},
		{"workfront-legacy", 13, 0},
		{"pubsub", 0, 24 * time.Hour},
		{"sap", 6, 0},
	}
	for _, tt := range tests {
		p := mustResolve(t, Spec{Preset: tt.name})
		if p.Preset != tt.name || p.MaxAttempts != tt.attempts || p.TTL != tt.ttl || p.Jitter != 0 {
			t.Errorf("%s: got attempts %d ttl %s jitter %g, want %d, %s, 0", tt.name, p.MaxAttempts, p.TTL, p.Jitter, tt.attempts, tt.ttl)
		}
		if p.SuccessCodes != nil || p.NoRetryCodes != nil {
			t.Errorf("%s: codes %v / %v, want any 2xx and none exempt", tt.name, p.SuccessCodes, p.NoRetryCodes)
		}
	}
}

func TestResolveUnknownPresetListsNames(t *testing.T) {
	_, err := Resolve(Spec{Preset: "nope"})
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "preset" {
		t.Fatalf("err = %v, want FieldError on preset", err)
	}
	for _, name := range Presets() {
		if !strings.Contains(fe.Detail, name) {
			t.Errorf("detail %q does not list %q", fe.Detail, name)
		}
	}
}

func TestResolveCustomErrors(t *testing.T) {
	tests := []struct {
		spec  string
		field string
	}{
		{`{"preset":"custom","ttl":"1h"}`, "delays"},
		{`{"preset":"custom","delays":["1s"],"max_attempts":0}`, "ttl"},
		{`{"preset":"custom","delays":["1s"],"ttl":"1h","success_codes":[42]}`, "success_codes[0]"},
	}
	for _, tt := range tests {
		_, err := Resolve(parseSpec(t, tt.spec))
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != tt.field {
			t.Errorf("%s: err = %v, want FieldError on %q", tt.spec, err, tt.field)
		}
	}
}

func TestPresetsStableOrder(t *testing.T) {
	want := []string{"eventgrid", "workfront", "workfront-legacy", "pubsub", "sap", "custom"}
	if got := Presets(); !slices.Equal(got, want) {
		t.Fatalf("Presets() = %v, want %v", got, want)
	}
	Presets()[0] = "mutated"
	if Presets()[0] != "eventgrid" {
		t.Fatal("Presets returned shared storage")
	}
	for _, name := range want {
		if Description(name) == "" {
			t.Errorf("no description for %s", name)
		}
	}
	if Description("nope") != "" {
		t.Error("description for an unknown preset")
	}
}

func TestSuccess(t *testing.T) {
	eg := mustResolve(t, Spec{})
	for code := 100; code <= 599; code++ {
		want := code >= 200 && code <= 204
		if got := eg.Success(code); got != want {
			t.Errorf("eventgrid Success(%d) = %v, want %v", code, got, want)
		}
	}
	wf := mustResolve(t, Spec{Preset: "workfront"})
	for _, code := range []int{200, 205, 226, 299} {
		if !wf.Success(code) {
			t.Errorf("workfront Success(%d) = false", code)
		}
	}
	for _, code := range []int{0, 199, 300, 404, 500} {
		if wf.Success(code) {
			t.Errorf("workfront Success(%d) = true", code)
		}
	}
	only := mustResolve(t, Spec{Preset: "sap", SuccessCodes: []int{202}})
	if only.Success(200) || !only.Success(202) {
		t.Error("success_codes override not applied")
	}
}

func TestExpired(t *testing.T) {
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	p := mustResolve(t, Spec{}) // 24h
	if p.Expired(start, start.Add(24*time.Hour-time.Nanosecond)) {
		t.Error("expired before the deadline")
	}
	if !p.Expired(start, start.Add(24*time.Hour)) {
		t.Error("not expired at the deadline")
	}
	wf := mustResolve(t, Spec{Preset: "workfront"}) // no TTL
	if wf.Expired(start, start.Add(1000*time.Hour)) {
		t.Error("a policy without TTL expired")
	}
}

func mustResolve(t *testing.T, s Spec) Policy {
	t.Helper()
	p, err := Resolve(s)
	if err != nil {
		t.Fatalf("Resolve(%+v): %v", s, err)
	}
	return p
}

func parseSpec(t *testing.T, js string) Spec {
	t.Helper()
	var s Spec
	if err := json.Unmarshal([]byte(js), &s); err != nil {
		t.Fatalf("%s: %v", js, err)
	}
	return s
}
