package event

import (
	"errors"
	"testing"
)

// TestParseEncodedBinding: NATS header values are percent-decoded once
// (after unquoting); a value that is not valid percent-encoding is taken as
// it is (a producer that does not encode); one that decodes to bytes that
// are not UTF-8 is refused naming its header.
func TestParseEncodedBinding(t *testing.T) {
	attrs := func(subject string) map[string]string {
		return map[string]string{"specversion": "1.0", "id": "e1", "source": "/s", "type": "t", "subject": subject}
	}
	for _, c := range []struct{ sent, want string }{
		{"a%20b", "a b"},
		{"50% off", "50% off"},
		{"100%25", "100%"},
		{`"quoted%20value"`, "quoted value"},
		{"caf%C3%A9", "café"},
		{"café", "café"},
	} {
		evs, err := ParseEncodedBinding(attrs(c.sent), "application/json", []byte(`{}`))
		if err != nil {
			t.Fatalf("%q: %v", c.sent, err)
		}
		if got := evs[0].Subject; got != c.want {
			t.Errorf("subject sent %q read %q, want %q", c.sent, got, c.want)
		}
	}
	_, err := ParseEncodedBinding(attrs("%FF"), "application/json", []byte(`{}`))
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "ce-subject" {
		t.Fatalf("a subject decoding to bytes that are not UTF-8: %v", err)
	}
}
