package retry

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestDurationUnmarshal(t *testing.T) {
	tests := []struct {
		in     string
		want   time.Duration
		errHas string // "" when it must succeed
	}{
		{`"90s"`, 90 * time.Second, ""},
		{`2.5`, 2500 * time.Millisecond, ""},
		{`-1`, -time.Second, ""},
		{`9223372036`, 9223372036 * time.Second, ""},
		{`"2562047h47m16.854775807s"`, time.Duration(1<<63 - 1), ""},
		{`1e308`, 0, "1e308 seconds is out of range"},
		{`-1e308`, 0, "-1e308 seconds is out of range"},
		{`9223372037`, 0, "out of range"},
		{`"2562047h47m16.854775808s"`, 0, "out of range"},
		{`"9999999999h"`, 0, `"9999999999h" is out of range`},
		{`"1e308s"`, 0, `"1e308s" is not a duration`},
		{`"soon"`, 0, `"soon" is not a duration`},
		{`true`, 0, "must be a duration"},
		{`{}`, 0, "must be a duration"},
	}
	for _, tt := range tests {
		var d Duration
		err := d.UnmarshalJSON([]byte(tt.in))
		switch {
		case tt.errHas == "" && (err != nil || d.D() != tt.want):
			t.Errorf("%s: got %s, %v; want %s", tt.in, d.D(), err, tt.want)
		case tt.errHas != "" && (err == nil || !strings.Contains(err.Error(), tt.errHas)):
			t.Errorf("%s: got %s, %v; want an error containing %q", tt.in, d.D(), err, tt.errHas)
		case err != nil && strings.Contains(err.Error(), "-2562047h"):
			t.Errorf("%s: the error shows an overflowed duration: %v", tt.in, err)
		}
	}
}

// TestThen: sap ends by queuing, every other preset by dead-lettering, and
// then overrides either; anything else names the field.
func TestThen(t *testing.T) {
	for _, c := range []struct {
		preset, then, want string
	}{
		{"sap", "", ThenQueue}, {"eventgrid", "", ThenDeadLetter}, {"workfront", "", ThenDeadLetter},
		{"sap", "dead_letter", ThenDeadLetter}, {"pubsub", "queue", ThenQueue},
	} {
		p, err := Resolve(Spec{Preset: c.preset, Then: c.then})
		if err != nil || p.Then != c.want {
			t.Errorf("%s then %q: %q, %v; want %q", c.preset, c.then, p.Then, err, c.want)
		}
	}
	_, err := Resolve(Spec{Then: "retry"})
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "then" {
		t.Fatalf("then retry: %v, want a field error naming then", err)
	}
}
