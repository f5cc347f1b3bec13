package store

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// fakeStore is the Store a fake backend opens: only its value matters.
type fakeStore struct {
	Store
	value string
	o     Options
}

// fakeBackends registers, for one test, an embedded backend opening
// "word" and a shared one opening the schemes "fk" and "fake" (registered
// first, so Usage's order is not registration order), in place of the
// registered ones.
func fakeBackends(t *testing.T) {
	t.Helper()
	registry.mu.Lock()
	old := registry.backends
	registry.backends = nil
	registry.mu.Unlock()
	t.Cleanup(func() {
		registry.mu.Lock()
		registry.backends = old
		registry.mu.Unlock()
	})
	open := func(ctx context.Context, value string, o Options) (Store, error) {
		if strings.Contains(value, "fail") {
			return nil, errors.New("cannot open")
		}
		return fakeStore{value: value, o: o}, nil
	}
	Register(Backend{Name: "Shared", Schemes: []string{"fk", "fake"}, Usage: "a fake:// URL",
		Capabilities: Capabilities{Shared: true}, Open: open, Descriptors: func(o Options) int { return o.MaxConns + 1 }})
	Register(Backend{Name: "Embedded", Words: []string{"word"}, Usage: "word", Open: open, Descriptors: func(Options) int { return 7 }})
}

// TestParsePicksTheBackend: a word is matched whole, a scheme as the
// value's beginning followed by "://", in its case; a value with a
// backend's scheme that is not a URL is a *URLSyntaxError naming the
// backend; any other value is an *UnknownURLError quoting it with its
// password redacted and listing the backends' values, embedded first.
func TestParsePicksTheBackend(t *testing.T) {
	fakeBackends(t)
	for value, want := range map[string]string{
		"word": "Embedded", "fk://h/db": "Shared", "fake://u:p@h:5/db?x=1": "Shared",
		"": "", "Word": "", "word:": "", " word": "", "FAKE://h": "", "fake:/h": "", "fk:h": "", "other://h": "", "/data/word": "",
	} {
		b, err := Parse(value)
		var unknown *UnknownURLError
		switch {
		case want == "" && !errors.As(err, &unknown):
			t.Errorf("Parse(%q) = %q, %v; want an *UnknownURLError", value, b.Name, err)
		case want != "" && (err != nil || b.Name != want):
			t.Errorf("Parse(%q) = %q, %v; want %s", value, b.Name, err, want)
		}
	}
	_, err := Parse("other://u:secret@h/db")
	if want := `"other://u:xxxxx@h/db": want word or a fake:// URL`; err == nil || err.Error() != want {
		t.Errorf("unknown value: %v; want %s", err, want)
	}
	_, err = Parse("fake://u:secret@h:port/db")
	var syntax *URLSyntaxError
	if !errors.As(err, &syntax) || syntax.Backend != "Shared" || strings.Contains(err.Error(), "secret") ||
		!strings.HasPrefix(err.Error(), "is not a URL: ") {
		t.Errorf("malformed URL: %v; want a *URLSyntaxError of Shared, without the password", err)
	}
}

// TestOpenGivesTheValueAndOptions: Open calls the backend Parse picks with
// the value and the options as given, and names the backend in its error.
func TestOpenGivesTheValueAndOptions(t *testing.T) {
	fakeBackends(t)
	o := Options{DataDir: "/d", MaxConns: 9}
	s, err := Open(context.Background(), "fk://h/db", o)
	if f, ok := s.(fakeStore); err != nil || !ok || f.value != "fk://h/db" || f.o.DataDir != o.DataDir || f.o.MaxConns != o.MaxConns {
		t.Fatalf("Open = %+v, %v", s, err)
	}
	if _, err := Open(context.Background(), "fake://h/fail", o); err == nil || err.Error() != "opening the Shared store: cannot open" {
		t.Errorf("a backend's error: %v", err)
	}
	var unknown *UnknownURLError
	if s, err := Open(context.Background(), "nope", o); s != nil || !errors.As(err, &unknown) {
		t.Errorf("Open(unknown) = %v, %v; want an *UnknownURLError", s, err)
	}
}

// TestRegisterRefusesClashes: a word or scheme another backend opens, or a
// backend missing what Open and Parse need, panics.
func TestRegisterRefusesClashes(t *testing.T) {
	fakeBackends(t)
	open := func(context.Context, string, Options) (Store, error) { return nil, nil }
	desc := func(Options) int { return 0 }
	for name, b := range map[string]Backend{
		"word taken":     {Name: "X", Words: []string{"word"}, Usage: "x", Open: open, Descriptors: desc},
		"scheme taken":   {Name: "X", Schemes: []string{"x", "fake"}, Usage: "x", Open: open, Descriptors: desc},
		"no values":      {Name: "X", Usage: "x", Open: open, Descriptors: desc},
		"no Open":        {Name: "X", Words: []string{"x"}, Usage: "x", Descriptors: desc},
		"no Descriptors": {Name: "X", Words: []string{"x"}, Usage: "x", Open: open},
		"no usage":       {Name: "X", Words: []string{"x"}, Open: open, Descriptors: desc},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: Register did not panic", name)
				}
			}()
			Register(b)
		}()
	}
	if got := Usage(); got != "word or a fake:// URL" {
		t.Errorf("Usage after refused registrations = %q", got)
	}
}

// TestNoBackendRegistered: with no backend, the error says how to get one.
func TestNoBackendRegistered(t *testing.T) {
	fakeBackends(t)
	registry.mu.Lock()
	registry.backends = nil
	registry.mu.Unlock()
	_, err := Parse("sqlite")
	if err == nil || !strings.Contains(err.Error(), "internal/store/backends") {
		t.Errorf("Parse with no backend: %v", err)
	}
}
