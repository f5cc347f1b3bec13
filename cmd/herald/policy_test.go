package main

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/herald-events/herald/internal/retry"
)

func runPolicyT(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = runPolicy(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestPolicyShowTable(t *testing.T) {
	code, out, errOut := runPolicyT(t, "show", "workfront")
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	for _, want := range []string{
		"preset workfront: max attempts 12, ttl none, success codes any 2xx, no-retry codes none",
		"ATTEMPT", "DELAY", "OFFSET",
		"1m24.8s (84.8 s)",        // retry 1
		"4m14.4s (254.4 s)",       // retry 2 offset
		"48h13m5.6s (173585.6 s)", // retry 11 offset
		"24h7m15.2s (86835.2 s)",  // retry 11 delay
		"MaxDeliveryAttemptsExceeded",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var rows int
	for _, l := range lines {
		if f := strings.Fields(l); len(f) > 0 {
			if _, err := strconv.Atoi(f[0]); err == nil {
				rows++
			}
		}
	}
	if rows != 12 {
		t.Errorf("%d attempt rows, want 12:\n%s", rows, out)
	}

	code, out, _ = runPolicyT(t, "show", "eventgrid")
	if code != 0 {
		t.Fatal(code)
	}
	for _, want := range []string{
		"max attempts 30, ttl 24h, success codes 200-204, no-retry codes 400,401,403,404,413",
		"jitter ±5% (not shown)",
		"408 ≥ 2m, 503 ≥ 30s, others ≥ 10s",
		"12h (43200 s)",
		"22h46m40s (82000 s)",
		"TimeToLiveExceeded",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("eventgrid output lacks %q:\n%s", want, out)
		}
	}
}

func TestPolicyShowJSON(t *testing.T) {
	// Flags may follow the name.
	code, out, errOut := runPolicyT(t, "show", "sap", "--json")
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	var got policyJSON
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	want := []float64{0, 8, 64, 512, 4096, 32768}
	if len(got.Rows) != len(want) {
		t.Fatalf("%d rows, want %d", len(got.Rows), len(want))
	}
	for i, w := range want {
		if got.Rows[i].Attempt != i+1 || math.Abs(got.Rows[i].OffsetSeconds-w) > 1e-9 {
			t.Errorf("row %d = %+v, want offset %g", i, got.Rows[i], w)
		}
	}
	// How it ends, as the text output says.
	if got.Preset != "sap" || got.MaxAttempts != 6 || got.EndsAfterAttempt != 6 || got.EndReason != retry.ReasonMaxAttempts || got.Truncated {
		t.Errorf("sap: %+v", got)
	}
	// And precede it; field names are snake_case.
	code, out, _ = runPolicyT(t, "show", "--json", "workfront")
	if code != 0 || !strings.Contains(out, `"offset_seconds": 173585.6`) || !strings.Contains(out, `"delay_seconds": 84.8`) {
		t.Errorf("exit %d, output:\n%s", code, out)
	}
	// Event Grid: ttl, jitter, success and no-retry codes, minimum delays.
	code, out, _ = runPolicyT(t, "show", "eventgrid", "--json")
	got = policyJSON{}
	if err := json.Unmarshal([]byte(out), &got); code != 0 || err != nil {
		t.Fatalf("exit %d, %v:\n%s", code, err, out)
	}
	if got.TTLSeconds != 86400 || got.Jitter != 0.05 || got.MaxAttempts != 30 || len(got.SuccessCodes) == 0 ||
		len(got.NoRetryCodes) == 0 || got.MinDelaySeconds["408"] != 120 || got.MinDelaySeconds["0"] != 10 ||
		got.EndReason == "" || got.EndsAfterAttempt != got.Rows[len(got.Rows)-1].Attempt {
		t.Errorf("eventgrid: %+v", got)
	}
	// The text output's first and last lines say the same.
	_, text, _ := runPolicyT(t, "show", "eventgrid")
	for _, want := range []string{"max attempts 30", "ttl 24h", "jitter ±5%",
		"after attempt " + strconv.Itoa(got.EndsAfterAttempt) + " fails: " + got.EndReason} {
		if !strings.Contains(text, want) {
			t.Errorf("text output lacks %q:\n%s", want, text)
		}
	}
}

func TestPolicyShowSpec(t *testing.T) {
	code, out, errOut := runPolicyT(t, "show", "custom", "--json", "--spec", `{"delays":["100ms","1s"],"max_attempts":4}`)
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	var got policyJSON
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	if rows := got.Rows; len(rows) != 4 || math.Abs(rows[3].OffsetSeconds-2.1) > 1e-9 || got.MaxAttempts != 4 || got.SuccessCodes != nil {
		t.Errorf("custom: %+v", got)
	}
	code, _, errOut = runPolicyT(t, "show", "custom")
	if code != 2 || !strings.Contains(errOut, "delays") || !strings.Contains(errOut, "--spec") {
		t.Errorf("custom without spec: exit %d, stderr %q", code, errOut)
	}
	code, _, errOut = runPolicyT(t, "show", "eventgrid", "--spec", `{"max_attempts":31}`)
	if code != 2 || !strings.Contains(errOut, "--spec") || !strings.Contains(errOut, "max_attempts") {
		t.Errorf("bad spec: exit %d, stderr %q", code, errOut)
	}
}

func TestPolicyErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"show", "nope"}, `unknown preset "nope"`},
		{[]string{"show"}, "want one preset name"},
		{[]string{"show", "sap", "pubsub"}, "want one preset name"},
		{[]string{"show", "sap", "--bogus"}, "bogus"},
		{[]string{"frobnicate"}, "unknown command"},
		{nil, "Usage"},
		{[]string{"list", "extra"}, "unexpected argument"},
	}
	for _, tt := range tests {
		code, out, errOut := runPolicyT(t, tt.args...)
		if code != 2 || !strings.Contains(errOut, tt.want) || out != "" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want 2 and %q", tt.args, code, out, errOut, tt.want)
		}
	}
	// The unknown-name message lists the presets.
	_, _, errOut := runPolicyT(t, "show", "nope")
	for _, name := range retry.Presets() {
		if !strings.Contains(errOut, name) {
			t.Errorf("message %q does not list %s", errOut, name)
		}
	}
}

func TestPolicyList(t *testing.T) {
	code, out, _ := runPolicyT(t, "list")
	if code != 0 {
		t.Fatal(code)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != len(retry.Presets()) {
		t.Fatalf("%d lines:\n%s", len(lines), out)
	}
	for i, name := range retry.Presets() {
		if f := strings.Fields(lines[i]); len(f) < 2 || f[0] != name {
			t.Errorf("line %d = %q, want %s and a description", i, lines[i], name)
		}
	}
	if !strings.Contains(lines[0], "[default]") {
		t.Errorf("default not marked: %q", lines[0])
	}
}

func TestPolicyCodes(t *testing.T) {
	for _, tt := range []struct {
		in   []int
		want string
	}{
		{[]int{204, 200, 201, 202, 203}, "200-204"},
		{[]int{400, 401, 403, 404, 413}, "400,401,403,404,413"},
		{[]int{200, 201}, "200,201"},
		{[]int{500, 500}, "500"},
	} {
		if got := policyCodes(tt.in); got != tt.want {
			t.Errorf("policyCodes(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
