package redact

import (
	"errors"
	"net"
	"net/url"
	"syscall"
	"testing"
)

func TestRedactedText(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`Post "http://usr:SuperSecretPw1@127.0.0.1:9/hook": dial tcp 127.0.0.1:9: connect: connection refused`,
			`Post "http://usr:xxxxx@127.0.0.1:9/hook": dial tcp 127.0.0.1:9: connect: connection refused`},
		// http.Client.Do's own redaction, made Herald's.
		{`Post "https://usr:***@h.example/": EOF`, `Post "https://usr:xxxxx@h.example/": EOF`},
		// The authority's last @ ends the userinfo; a colon after it is the port's.
		{`https://u:p@ss:w@h.example:8443?q=1`, `https://u:xxxxx@h.example:8443?q=1`},
		{`parse "http://u:p%zzw@h.example/x": invalid URL escape "%zz"`, `parse "http://u:xxxxx@h.example/x": invalid URL escape "%zz"`},
		{`two: http://a:one@x.example and https://b:two@y.example/p`, `two: http://a:xxxxx@x.example and https://b:xxxxx@y.example/p`},
		{`at the end http://a:secret@x.example`, `at the end http://a:xxxxx@x.example`},
		{"quoted 'http://a:secret@x.example' <http://b:s2@y.example>", "quoted 'http://a:xxxxx@x.example' <http://b:xxxxx@y.example>"},
		{"http://a:s\tb@x.example", "http://a:s\tb@x.example"}, // white space ends the authority: no userinfo in "a:s"
		// A userinfo without a password: the user name is the secret (a token).
		{`http://user@h.example/`, `http://xxxxx@h.example/`},
		{`Post "https://ghp_T0KEN@h.example:8443/hook": EOF`, `Post "https://xxxxx@h.example:8443/hook": EOF`},
		{`two: https://tok@x.example and http://a:pw@y.example`, `two: https://xxxxx@x.example and http://a:xxxxx@y.example`},
		{`https://t@k@h.example`, `https://xxxxx@h.example`}, // the authority's last @ ends the userinfo
		// Nothing to redact.
		{`http://xxxxx@h.example/`, `http://xxxxx@h.example/`},
		{`http://@h.example/`, `http://@h.example/`},
		{`http://h.example:8080/a@b`, `http://h.example:8080/a@b`},
		{`http://u:xxxxx@h.example/`, `http://u:xxxxx@h.example/`},
		{`no URL: a:b@c`, `no URL: a:b@c`},
		{`://`, `://`},
		{``, ``},
	} {
		if got := Text(c.in); got != c.want {
			t.Errorf("Text(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestRedactedURL(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"https://usr:pw@h.example/hook?x=1", "https://usr:xxxxx@h.example/hook?x=1"},
		{"https://usr@h.example/hook", "https://xxxxx@h.example/hook"},
		{"https://TOKEN@h.example/x?q=1", "https://xxxxx@h.example/x?q=1"},
		{"https://usr:@h.example/hook", "https://usr:xxxxx@h.example/hook"},
		{"https://xxxxx@h.example/hook", "https://xxxxx@h.example/hook"},
		{"https://@h.example/hook", "https://@h.example/hook"},
		{"https://h.example/hook", "https://h.example/hook"},
		// Not a URL net/url reads (a bad port): redacted all the same.
		{"https://usr:pw@h.example:port/hook", "https://usr:xxxxx@h.example:port/hook"},
		{"https://TOKEN@h.example:port/hook", "https://xxxxx@h.example:port/hook"},
	} {
		if got := URL(c.in); got != c.want {
			t.Errorf("URL(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestMasked: a URL as Herald shows it (Mask where its secret goes) is
// told from one to store.
func TestMasked(t *testing.T) {
	for in, want := range map[string]bool{
		"https://usr:xxxxx@h.example/": true, "https://xxxxx@h.example/": true,
		"https://usr:pw@h.example/": false, "https://TOKEN@h.example/": false, "https://h.example/": false,
		"https://xxxxx:pw@h.example/": false, "https://xxxxx:@h.example/": false, "%zz://xxxxx@h": false,
	} {
		if got := Masked(in); got != want {
			t.Errorf("Masked(%q) = %v, want %v", in, got, want)
		}
		if want && URL(in) != in {
			t.Errorf("URL(%q) = %q: a masked URL is shown as it is", in, URL(in))
		}
	}
}

func TestRedactedError(t *testing.T) {
	if Error(nil) != nil {
		t.Fatal("Error(nil) is not nil")
	}
	plain := errors.New("connection refused")
	if Error(plain) != plain {
		t.Fatal("an error with nothing to redact is not returned as is")
	}
	cause := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	err := Error(&url.Error{Op: "Post", URL: "http://usr:SuperSecretPw1@127.0.0.1:9/", Err: cause})
	if want := `Post "http://usr:xxxxx@127.0.0.1:9/": dial tcp: connection refused`; err.Error() != want {
		t.Fatalf("Error: %q, want %q", err, want)
	}
	var ue *url.Error
	if !errors.Is(err, syscall.ECONNREFUSED) || !errors.As(err, &ue) {
		t.Fatal("the redacted error does not unwrap to its cause")
	}
	// http.Client.Do hides a password but not a user name that stands for a token.
	err = Error(&url.Error{Op: "Post", URL: (&url.URL{Scheme: "https", User: url.User("T0KEN"), Host: "h.example"}).Redacted(), Err: cause})
	if want := `Post "https://xxxxx@h.example": dial tcp: connection refused`; err.Error() != want {
		t.Fatalf("Error: %q, want %q", err, want)
	}
}
