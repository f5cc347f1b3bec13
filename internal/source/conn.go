package source

import (
	"context"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/herald-events/herald/internal/destination"
	"github.com/herald-events/herald/internal/redact"
	"github.com/herald-events/herald/internal/strictjson"
	"github.com/herald-events/herald/internal/subscription"
)

// Conn is how a broker is reached: a URL (NATS, AMQP, MQTT) or a list of
// broker addresses with optional TLS and SASL (Kafka).
//
// These settings are the same a broker destination needs (issue 40's
// destinations, internal/broker); they live here until both sides share
// one package.
type Conn struct {
	URL     string   `json:"url,omitempty"`
	Brokers []string `json:"brokers,omitempty"`
	TLS     *TLS     `json:"tls,omitempty"`
	SASL    *SASL    `json:"sasl,omitempty"`
}

// TLS turns TLS on for Kafka brokers: ServerName overrides the name the
// certificate is checked against ("": the broker's host); CAPEM, when set,
// is the PEM of the certificates trusted instead of the system's.
type TLS struct {
	ServerName string `json:"server_name,omitempty"`
	CAPEM      string `json:"ca_pem,omitempty"`
}

// SASL authenticates to Kafka brokers: PLAIN, SCRAM-SHA-256 or
// SCRAM-SHA-512. The password is a secret: never shown.
type SASL struct {
	Mechanism string `json:"mechanism"`
	Username  string `json:"username"`
	Password  string `json:"password"`
}

// SASLMechanisms are the SASL mechanisms a Kafka source may use.
var SASLMechanisms = []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"}

// Bounds of the connection settings.
const (
	MaxURL     = 2048
	MaxBrokers = 16
	maxCAPEM   = 64 << 10
)

// schemes are the URL schemes of each type with a URL.
var schemes = map[string][]string{
	TypeNATS: {"nats", "tls"},
	TypeAMQP: {"amqp", "amqps"},
	TypeMQTT: {"mqtt", "mqtts", "tcp", "ssl"},
}

// Hosts returns the host names the connection dials (for the destination
// guard).
func (c Conn) Hosts() []string {
	if c.URL != "" {
		u, err := url.Parse(c.URL)
		if err != nil {
			return nil
		}
		return []string{u.Hostname()}
	}
	var hs []string
	for _, b := range c.Brokers {
		h, _, _ := net.SplitHostPort(b)
		hs = append(hs, h)
	}
	return hs
}

// Shown is the connection as Herald shows it: the URL's secret and the
// SASL password replaced by redact.Mask.
func (c Conn) Shown() Conn {
	out := c
	if c.URL != "" {
		out.URL = redact.URL(c.URL)
	}
	if c.SASL != nil {
		s := *c.SASL
		if s.Password != "" {
			s.Password = redact.Mask
		}
		out.SASL = &s
	}
	return out
}

// checkURL checks a broker URL of type typ: one of its schemes, a host,
// and no more than MaxURL bytes.
func checkURL(typ, s string) *strictjson.Error {
	if err := strictjson.CheckText("url", s, MaxURL, true); err != nil {
		return err
	}
	u, err := url.Parse(s)
	want := schemes[typ]
	if err != nil || !slices.Contains(want, strings.ToLower(u.Scheme)) {
		return strictjson.Errorf("url", "must be a %s URL (%s://host:port)", typ, strings.Join(want, "://, ")+"://")
	}
	if u.Hostname() == "" {
		return strictjson.Errorf("url", "must name a host")
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return strictjson.Errorf("url", "port %q must be 1 to 65535", p)
		}
	}
	if redact.Masked(s) {
		return strictjson.Errorf("url", "shows %s where a password goes, as Herald shows a URL's secret: send the URL with its password "+
			"(or leave url out of a change to keep it)", redact.Mask)
	}
	return nil
}

// checkBrokers checks Kafka broker addresses: 1 to MaxBrokers of host:port.
func checkBrokers(bs []string) *strictjson.Error {
	if len(bs) == 0 || len(bs) > MaxBrokers {
		return strictjson.Errorf("brokers", "must list 1 to %d broker addresses (host:port)", MaxBrokers)
	}
	for i, b := range bs {
		field := "brokers[" + strconv.Itoa(i) + "]"
		if err := strictjson.CheckText(field, b, 300, true); err != nil {
			return err
		}
		h, p, err := net.SplitHostPort(b)
		n, perr := strconv.Atoi(p)
		if err != nil || h == "" || perr != nil || n < 1 || n > 65535 {
			return strictjson.Errorf(field, "must be host:port, not %s", strictjson.Shorten(b))
		}
	}
	return nil
}

// checkTLSSASL checks Kafka's TLS and SASL settings.
func checkTLSSASL(t *TLS, s *SASL) *strictjson.Error {
	if t != nil {
		if err := strictjson.CheckText("tls.server_name", t.ServerName, 253, false); err != nil {
			return err
		}
		if len(t.CAPEM) > maxCAPEM || t.CAPEM != "" && !strings.Contains(t.CAPEM, "-----BEGIN CERTIFICATE-----") {
			return strictjson.Errorf("tls.ca_pem", "must be PEM certificates of at most %d bytes", maxCAPEM)
		}
	}
	if s == nil {
		return nil
	}
	if !slices.Contains(SASLMechanisms, s.Mechanism) {
		return strictjson.Errorf("sasl.mechanism", "must be one of %s", strings.Join(SASLMechanisms, ", "))
	}
	if err := strictjson.CheckText("sasl.username", s.Username, 256, true); err != nil {
		return err
	}
	if s.Password == redact.Mask {
		return strictjson.Errorf("sasl.password", "is %s, as Herald shows the password: send the password (or leave sasl out of a change to keep it)", redact.Mask)
	}
	return strictjson.CheckText("sasl.password", s.Password, 1024, true)
}

// CheckDestinations refuses a connection a host of which g refuses
// (subscription.CheckDestination: a literal address the policy does not
// allow, a loopback or local network's name, a name that resolves now only
// to refused addresses), naming url or brokers[i]. The consumer's dials
// are checked again, each one (destination.Dialer).
func CheckDestinations(ctx context.Context, g destination.Guard, c Conn) error {
	if c.URL != "" {
		if err := subscription.CheckDestination(ctx, g, "url", c.URL); err != nil {
			return err
		}
		return nil
	}
	for i, b := range c.Brokers {
		if err := subscription.CheckDestination(ctx, g, "brokers["+strconv.Itoa(i)+"]", "kafka://"+b); err != nil {
			return err
		}
	}
	return nil
}
