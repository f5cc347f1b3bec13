package client

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestNewRefusesBadInput: New names what is wrong with the base URL or an
// option.
func TestNewRefusesBadInput(t *testing.T) {
	cases := []struct {
		base string
		opts []Option
		want string
	}{
		{"127.0.0.1:8080", nil, "the scheme must be http or https"},
		{"ftp://h", nil, "the scheme must be http or https"},
		{"http://", nil, "no host"},
		{"http://h/?a=1", nil, "a query or fragment is not allowed"},
		{"http://u:p@h", nil, "user information is not allowed"},
		{"http://h", []Option{WithTimeout(0)}, "WithTimeout: 0s is not a positive duration"},
		{"http://h", []Option{WithKey("a b")}, "WithKey: the key has white space in it"},
		{"http://h", []Option{WithHTTPClient(nil)}, "WithHTTPClient: nil"},
		{"http://h", []Option{WithUserAgent("a\nb")}, "WithUserAgent"},
	}
	for _, tc := range cases {
		_, err := New(tc.base, tc.opts...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%q): %v, want an error containing %q", tc.base, err, tc.want)
		}
	}
	c, err := New("https://h:1/prefix/")
	if err != nil {
		t.Fatal(err)
	}
	if c.base.String() != "https://h:1/prefix" || c.timeout != DefaultTimeout {
		t.Errorf("New: base %s timeout %v", c.base, c.timeout)
	}
}

// answering returns a client of a server that answers every request with
// h.
func answering(t *testing.T, h http.HandlerFunc, opts ...Option) *Client {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	c, err := New(srv.URL, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestProblemFromAnswer: a problem document becomes a *Problem with its
// field and a 503's Retry-After (seconds or a date); a body that is not
// one still gives the status and its text.
func TestProblemFromAnswer(t *testing.T) {
	c := answering(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/subscriptions/sub_1":
			w.Header().Set("Content-Type", "application/problem+json")
			w.Header().Set("Retry-After", "7")
			w.WriteHeader(503)
			_, _ = io.WriteString(w, `{"type":"urn:herald:problem:unavailable","title":"Service unavailable","status":503,"detail":"the store is away","field":"x","future":1}`)
		case "/v1/subscriptions/sub_2":
			w.Header().Set("Content-Type", "text/html")
			w.Header().Set("Retry-After", time.Now().Add(time.Hour).UTC().Format(http.TimeFormat))
			w.WriteHeader(502)
			_, _ = io.WriteString(w, "<html>bad gateway</html>")
		}
	})
	_, err := c.Subscriptions.Get(context.Background(), "sub_1")
	var p *Problem
	if !errors.As(err, &p) {
		t.Fatalf("Get: %v, want a *Problem", err)
	}
	want := Problem{Type: "urn:herald:problem:unavailable", Title: "Service unavailable", Status: 503, Detail: "the store is away", Field: "x", RetryAfter: 7 * time.Second}
	if *p != want {
		t.Errorf("problem %+v, want %+v", *p, want)
	}
	if got := p.Error(); got != "herald: 503 Service unavailable: the store is away (field x)" {
		t.Errorf("Error() = %q", got)
	}
	_, err = c.Subscriptions.Get(context.Background(), "sub_2")
	if !errors.As(err, &p) || p.Status != 502 || p.Title != "Bad Gateway" || p.Type != "" {
		t.Fatalf("a non-JSON 502: %v (%+v)", err, p)
	}
	if p.RetryAfter < 59*time.Minute || p.RetryAfter > time.Hour {
		t.Errorf("Retry-After an hour from now read as %v", p.RetryAfter)
	}
}

// TestRequestTimeout: a server that does not answer is given up on after
// the client's timeout, with the context's deadline error.
func TestRequestTimeout(t *testing.T) {
	c := answering(t, func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }, WithTimeout(50*time.Millisecond))
	start := time.Now()
	_, err := c.Jobs.Get(context.Background(), "job_1")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Get against a silent server: %v, want context.DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("gave up after %v", d)
	}
}

// TestAnswerSizeBound: an answer longer than the bound is an error, not a
// truncated value.
func TestAnswerSizeBound(t *testing.T) {
	c := answering(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, `{"id":"job_1","error":"`+strings.Repeat("x", 200)+`"}`)
	})
	c.maxResponse = 100
	if _, err := c.Jobs.Get(context.Background(), "job_1"); err == nil || !strings.Contains(err.Error(), "longer than 100 bytes") {
		t.Fatalf("a 200-byte answer with a 100-byte bound: %v", err)
	}
	c.maxResponse = 1000
	if j, err := c.Jobs.Get(context.Background(), "job_1"); err != nil || j.ID != "job_1" {
		t.Fatalf("within the bound: %v %+v", err, j)
	}
}

// TestUnknownMembersDecode: answers with members this client does not know
// still decode (a newer server).
func TestUnknownMembersDecode(t *testing.T) {
	c := answering(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, `{"id":"sub_1","name":"n","timeout":"30s","retry_policy":{"preset":"eventgrid","ttl":86400,"new":true},"future":{"a":[1]}}`)
	})
	s, err := c.Subscriptions.Get(context.Background(), "sub_1")
	if err != nil {
		t.Fatal(err)
	}
	if s.ID != "sub_1" || s.Timeout != Duration(30*time.Second) || *s.RetryPolicy.TTL != Duration(24*time.Hour) {
		t.Errorf("decoded %+v", s)
	}
}

// TestAllFollowsCursors: All yields every item of every page, stops at
// the first error (yielded last) and on a cursor that does not move.
func TestAllFollowsCursors(t *testing.T) {
	pages := map[string]Page[int]{"": {[]int{1, 2}, "a"}, "a": {[]int{3}, "b"}, "b": {[]int{4}, ""}}
	list := func(_ context.Context, cursor string) (*Page[int], error) {
		p, ok := pages[cursor]
		if !ok {
			return nil, errors.New("no page " + cursor)
		}
		return &p, nil
	}
	var got []int
	for v, err := range All(context.Background(), list) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, v)
	}
	if len(got) != 4 || got[3] != 4 {
		t.Errorf("All yielded %v, want [1 2 3 4]", got)
	}
	for _, tc := range []struct {
		last Page[int]
		want string
	}{{Page[int]{[]int{4}, "c"}, "no page c"}, {Page[int]{[]int{4}, "b"}, "next_cursor is the cursor"}} {
		pages["b"] = tc.last
		var errs []error
		n := 0
		for _, err := range All(context.Background(), list) {
			n++
			if err != nil {
				errs = append(errs, err)
			}
		}
		if len(errs) != 1 || !strings.Contains(errs[0].Error(), tc.want) || n != 5 {
			t.Errorf("All with a last page %+v: %d values, errors %v; want 4 items and one error %q", tc.last, n, errs, tc.want)
		}
	}
}

// TestEventJSON: an event's extensions are written beside its attributes
// and read back; one named like an attribute is refused.
func TestEventJSON(t *testing.T) {
	e := Event{SpecVersion: "1.0", ID: "1", Source: "/s", Type: "t", Data: json.RawMessage(`{"a":1}`),
		Extensions: map[string]any{"partitionkey": "k", "n": 2}}
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"specversion":"1.0","id":"1","source":"/s","type":"t","data":{"a":1},"n":2,"partitionkey":"k"}`; string(b) != want {
		t.Errorf("marshalled %s, want %s", b, want)
	}
	var back Event
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.ID != "1" || back.Extensions["partitionkey"] != "k" || back.Extensions["n"] != json.Number("2") || string(back.Data) != `{"a":1}` {
		t.Errorf("read back %+v", back)
	}
	if _, err := json.Marshal(Event{Extensions: map[string]any{"subject": "x"}}); err == nil {
		t.Error("an extension named subject was written")
	}
}
