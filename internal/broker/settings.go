package broker

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/herald-events/herald/internal/redact"
	"github.com/herald-events/herald/internal/strictjson"
)

// Settings are how a broker is reached, the same for a broker destination
// (Destination embeds it) and a broker source (internal/source): a URL
// for NATS, AMQP and MQTT (its user and password the credentials), or
// seed brokers for Kafka with SASL; TLS for either. Its secrets are the
// URL's password and the SASL password: whoever shows a Settings shows
// Shown's.
type Settings struct {
	// URL is the broker's address with its credentials (Schemes).
	URL string `json:"url,omitempty"`
	// Brokers (Kafka) are the seed brokers, host:port each.
	Brokers []string `json:"brokers,omitempty"`
	// TLS, when set, is how the broker's certificate is checked: for
	// Kafka it turns TLS on; for a URL it is taken only with a TLS scheme
	// (TLSSchemes), which means TLS without it too (the system's roots).
	TLS *TLS `json:"tls,omitempty"`
	// SASL (Kafka) authenticates the connections; nil: none.
	SASL *SASL `json:"sasl,omitempty"`
}

// TLS is how a broker's certificate is checked. Its JSON is an object, or
// true (the zero TLS: the system's roots, the broker's host name; what a
// Kafka destination's "tls": true meant before TLS took options), or false
// (no TLS: Settings.Check drops it).
type TLS struct {
	// ServerName is the name the certificate must hold ("": the host
	// dialled).
	ServerName string `json:"server_name,omitempty"`
	// CAPEM, when set, is the PEM of the certificates trusted instead of
	// the system's roots (a private CA).
	CAPEM string `json:"ca_pem,omitempty"`
	// off: sent as false.
	off bool
}

// UnmarshalJSON reads true, false or an object (strictly: no other
// member).
func (t *TLS) UnmarshalJSON(b []byte) error {
	switch string(bytes.TrimSpace(b)) {
	case "true":
		*t = TLS{}
		return nil
	case "false":
		*t = TLS{off: true}
		return nil
	}
	type object TLS // without this method
	var o object
	if err := strictjson.Decode(b, "tls", &o); err != nil {
		return errors.New("must be true, false or {\"server_name\", \"ca_pem\"}: " + err.Error())
	}
	*t = TLS(o)
	return nil
}

// SASL is Kafka's SASL authentication. The password is a secret.
type SASL struct {
	// Mechanism is PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512.
	Mechanism string `json:"mechanism"`
	Username  string `json:"username"`
	Password  string `json:"password"`
}

// SASLMechanisms are the SASL mechanisms a Kafka connection may use.
var SASLMechanisms = []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"}

// MaskedPassword is a SASL password as Herald shows it.
const MaskedPassword = "****"

// Bounds of the connection settings, in bytes but MaxBrokers.
const (
	MaxURL      = 2048
	MaxBrokers  = 16
	MaxCAPEM    = 64 << 10
	maxUsername = 255
	maxPassword = 1024
)

// Schemes are the URL schemes of each type with a URL; TLSSchemes those
// that mean TLS.
var (
	Schemes = map[string][]string{
		TypeNATS: {"nats", "tls"},
		TypeAMQP: {"amqp", "amqps"},
		TypeMQTT: {"mqtt", "mqtts", "tcp", "ssl"},
	}
	TLSSchemes = []string{"tls", "amqps", "mqtts", "ssl"}
)

// Secure reports whether c's connections use TLS: a URL of a TLS scheme,
// or Kafka brokers with TLS.
func (c Settings) Secure() bool {
	if c.URL == "" {
		return c.TLS != nil
	}
	u, err := url.Parse(c.URL)
	return err == nil && slices.Contains(TLSSchemes, strings.ToLower(u.Scheme))
}

// TLSConfig is the TLS configuration of a connection to host (a name or
// address, without port): c.TLS's server name (else host) and roots (else
// the system's), TLS 1.2 at least.
func (c Settings) TLSConfig(host string) (*tls.Config, error) {
	tc := &tls.Config{ServerName: host, MinVersion: tls.VersionTLS12}
	if t := c.TLS; t != nil {
		if t.ServerName != "" {
			tc.ServerName = t.ServerName
		}
		if t.CAPEM != "" {
			tc.RootCAs = x509.NewCertPool()
			if !tc.RootCAs.AppendCertsFromPEM([]byte(t.CAPEM)) {
				return nil, Refused(errors.New("tls.ca_pem holds no certificate"))
			}
		}
	}
	return tc, nil
}

// Endpoint is one address a Settings dials, as the destination guard checks
// it: the field that names it (url, brokers[i]), its host and a URL of it.
type Endpoint struct {
	Field, Host, URL string
}

// Endpoints are the addresses c dials: its URL's, or each broker's.
func (c Settings) Endpoints() []Endpoint {
	if c.URL != "" {
		u, err := url.Parse(c.URL)
		if err != nil {
			return nil
		}
		return []Endpoint{{Field: "url", Host: u.Hostname(), URL: c.URL}}
	}
	out := make([]Endpoint, 0, len(c.Brokers))
	for i, b := range c.Brokers {
		h, _, _ := net.SplitHostPort(b)
		out = append(out, Endpoint{Field: "brokers[" + strconv.Itoa(i) + "]", Host: h, URL: "kafka://" + b})
	}
	return out
}

// Shown is c as Herald shows it: the URL's password as redact.Mask, the
// SASL password as MaskedPassword.
func (c Settings) Shown() Settings {
	out := c
	out.URL = redact.URL(c.URL)
	out.Brokers = slices.Clone(c.Brokers)
	if c.SASL != nil {
		s := *c.SASL
		s.Password = MaskedPassword
		out.SASL = &s
	}
	return out
}

// Restore puts back the secrets of stored that c holds as Herald shows
// them, only where c still connects where stored did: a URL equal to
// stored's shown (so the same host, port and user), a SASL password of
// MaskedPassword when c's seed brokers are stored's (in any order); and
// either only when c's TLS checks the certificate as stored's did (the
// same server name and roots, or none for both). A
// connection sent back as it was shown keeps its secrets; one sent to
// other brokers with the mask does not, so that whoever may change a
// connection but never read its password (an account key, a form) cannot
// have Herald send that password to a broker of their choosing. Check
// refuses a masked secret that nothing restored.
func (c *Settings) Restore(stored Settings) {
	if !sameTLS(c.TLS, stored.TLS) {
		return // a certificate checked otherwise (or not at all) takes the secrets again
	}
	if c.URL != "" && stored.URL != "" && c.URL == redact.URL(stored.URL) {
		c.URL = stored.URL
	}
	if c.SASL != nil && c.SASL.Password == MaskedPassword && stored.SASL != nil && sameBrokers(c.Brokers, stored.Brokers) {
		c.SASL.Password = stored.SASL.Password
	}
}

// sameTLS reports whether a and b check a broker's certificate alike:
// both none, or the same server name and roots (a TLS sent as false is
// none).
func sameTLS(a, b *TLS) bool {
	if a != nil && a.off {
		a = nil
	}
	if b != nil && b.off {
		b = nil
	}
	if a == nil || b == nil {
		return a == b
	}
	return a.ServerName == b.ServerName && a.CAPEM == b.CAPEM
}

// sameBrokers reports whether a and b hold the same brokers, in any order.
func sameBrokers(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// Check checks c as the connection of a broker of type typ, naming the
// field at fault relative to the connection (url, brokers[i],
// tls.ca_pem, sasl.password, …): a URL of one of the type's Schemes for
// NATS, AMQP and MQTT (tls only with a TLS scheme; no brokers, no sasl);
// 1 to MaxBrokers host:port and optional tls and sasl for Kafka (no url).
// A tls sent as false is dropped first.
func (c *Settings) Check(typ string) *strictjson.Error {
	if c.TLS != nil && c.TLS.off {
		c.TLS = nil
	}
	if err := c.checkAddress(typ); err != nil {
		return err
	}
	if err := checkTLS(c.TLS); err != nil {
		return err
	}
	return checkSASL(c.SASL)
}

// checkAddress checks the URL or the brokers, and which of tls and sasl
// the type takes.
func (c *Settings) checkAddress(typ string) *strictjson.Error {
	if typ == TypeKafka {
		if c.URL != "" {
			return strictjson.Errorf("url", "kafka takes brokers, not url")
		}
		return checkBrokers(c.Brokers)
	}
	switch {
	case c.Brokers != nil:
		return strictjson.Errorf("brokers", "only kafka takes brokers; %s takes url", typ)
	case c.SASL != nil:
		return strictjson.Errorf("sasl", "only kafka takes sasl; %s takes its user and password in its URL", typ)
	case c.URL == "":
		return strictjson.Errorf("url", "is required for %s", typ)
	}
	if err := checkURL(typ, c.URL); err != nil {
		return err
	}
	if c.TLS != nil && !c.Secure() {
		return strictjson.Errorf("tls", "applies to a TLS URL: use %s:// for %s with tls", tlsScheme(typ), typ)
	}
	return nil
}

// tlsScheme is typ's first TLS scheme.
func tlsScheme(typ string) string {
	for _, s := range Schemes[typ] {
		if slices.Contains(TLSSchemes, s) {
			return s
		}
	}
	return ""
}

// checkURL checks a broker URL of type typ: one of its schemes, a host, a
// port in range, no fragment, no masked password, at most MaxURL bytes.
func checkURL(typ, s string) *strictjson.Error {
	if err := strictjson.CheckText("url", s, MaxURL, true); err != nil {
		return err
	}
	u, err := url.Parse(s)
	want := Schemes[typ]
	if err != nil || !slices.Contains(want, strings.ToLower(u.Scheme)) {
		return strictjson.Errorf("url", "must be a %s URL (%s)", typ, strings.Join(want, "://, ")+"://")
	}
	switch {
	case u.Hostname() == "":
		return strictjson.Errorf("url", "must name a host")
	case u.Fragment != "":
		return strictjson.Errorf("url", "must not have a fragment (#...)")
	case redact.Masked(s):
		return strictjson.Errorf("url", "shows %s where a password goes, as Herald shows a URL's secret: send the URL with its password "+
			"(or the URL as Herald shows it, to keep the stored one, with tls as it was)", redact.Mask)
	}
	return checkPort("url", u.Port())
}

// checkPort checks a port ("": the default) is 1 to 65535.
func checkPort(field, p string) *strictjson.Error {
	if p == "" {
		return nil
	}
	if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
		return strictjson.Errorf(field, "the port must be a number from 1 to 65535, got %q", p)
	}
	return nil
}

// checkBrokers checks Kafka broker addresses: 1 to MaxBrokers of host:port.
func checkBrokers(bs []string) *strictjson.Error {
	if len(bs) == 0 || len(bs) > MaxBrokers {
		return strictjson.Errorf("brokers", "must list 1 to %d broker addresses (host:port), got %d", MaxBrokers, len(bs))
	}
	for i, b := range bs {
		field := "brokers[" + strconv.Itoa(i) + "]"
		if err := strictjson.CheckText(field, b, 300, true); err != nil {
			return err
		}
		h, p, err := net.SplitHostPort(b)
		if err != nil || h == "" || p == "" {
			return strictjson.Errorf(field, "must be host:port, such as kafka-1.example.com:9092, not %s", strictjson.Shorten(b))
		}
		if err := checkPort(field, p); err != nil {
			return err
		}
	}
	return nil
}

// checkTLS checks the server name and the CA certificates.
func checkTLS(t *TLS) *strictjson.Error {
	if t == nil {
		return nil
	}
	if err := strictjson.CheckText("tls.server_name", t.ServerName, 253, false); err != nil {
		return err
	}
	if t.CAPEM == "" {
		return nil
	}
	if len(t.CAPEM) > MaxCAPEM || !x509.NewCertPool().AppendCertsFromPEM([]byte(t.CAPEM)) {
		return strictjson.Errorf("tls.ca_pem", "must be PEM certificates (-----BEGIN CERTIFICATE-----) of at most %d bytes", MaxCAPEM)
	}
	return nil
}

// checkSASL checks the mechanism, user name and password.
func checkSASL(s *SASL) *strictjson.Error {
	if s == nil {
		return nil
	}
	if !slices.Contains(SASLMechanisms, s.Mechanism) {
		return strictjson.Errorf("sasl.mechanism", "must be one of %s, not %s", strings.Join(SASLMechanisms, ", "), strconv.Quote(strictjson.Shorten(s.Mechanism)))
	}
	if err := strictjson.CheckText("sasl.username", s.Username, maxUsername, true); err != nil {
		return err
	}
	if s.Password == MaskedPassword {
		return strictjson.Errorf("sasl.password", "is %s, as Herald shows a password, and none is stored for these brokers (a stored password is kept only for the brokers and tls it was given for): send the password", MaskedPassword)
	}
	return strictjson.CheckText("sasl.password", s.Password, maxPassword, true)
}
