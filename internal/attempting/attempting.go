// Package attempting is the third stage of the delivery path: it makes one
// attempt (one HTTP request, of one delivery or of a batch of one
// subscription's deliveries), decides by the subscription's retry policy
// what follows for each delivery, and returns what the exchange said of the
// endpoint with each delivery's outcome to be written.
//
// The scheduling stage calls Attempt on one of its workers; Attempt never
// calls back into it: everything it found (the endpoint's health, the
// deliveries to give back, the outcomes) is its return value, which the
// worker applies and hands on to the recording stage.
//
// Bounds: an attempt lasts at most its subscription's timeout
// (DefaultTimeout when it sets none); its response body is read up to
// MaxLoggedBody kept and maxDrainedBody drained. How many attempts run at
// once is the scheduler's bound (its MaxInFlight).
//
// Lock order: the attempt registry's mutex, then an attempt's own
// (registry.go: cancelSub and remove take the second under the first);
// nothing else is locked, and no store, network or blocking channel call is
// made, while either is held (cutting an attempt short calls its
// context's cancel function, which does not block).
package attempting

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/herald-events/herald/internal/catalog"
	"github.com/herald-events/herald/internal/clock"
	"github.com/herald-events/herald/internal/destination"
	"github.com/herald-events/herald/internal/health"
	"github.com/herald-events/herald/internal/oauth2"
	"github.com/herald-events/herald/internal/recording"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/tracing"
)

// Subscriptions is the stage's view of the subscriptions: the catalog.
type Subscriptions interface {
	Get(id string) *catalog.Entry
	// Sync catches up with the store (a delivery whose subscription is not
	// known may be for one created since the last sync).
	Sync(ctx context.Context) error
}

// Config configures an Attempter. A zero field takes its default (see
// DefaultConfig and setDefaults).
type Config struct {
	Catalog Subscriptions
	Clock   clock.Clock  // default clock.Real{}
	Logger  *slog.Logger // default discards
	Metrics *Metrics     // default: a Metrics on a private registry
	// Owner names this process in the outcomes' lease guard (the
	// scheduler's lease owner).
	Owner string
	// StoreTimeout bounds a catalog sync made for an unknown subscription
	// (default 30s).
	StoreTimeout time.Duration
	// Destinations says which addresses attempts may go to (the zero
	// Policy: public addresses only). The default Client enforces it on
	// every connection; a Client given here is on its own.
	Destinations destination.Policy
	// Resolver looks up the addresses of URLs' host names for the default
	// Client (default net.DefaultResolver); the server gives the same one
	// to the API's check of a subscription's URL (destination.Guard).
	// Tests inject their own.
	Resolver destination.Resolver
	// MaxIdleConns bounds the default Client's idle connections (default
	// 1,024: the scheduler's default MaxInFlight; the server gives the
	// scheduler's bound).
	MaxIdleConns int
	// Client sends the attempts (default NewHTTPClient(Destinations,
	// Resolver, MaxIdleConns)).
	Client *http.Client
	// RootCAs, when set, are the certificate authorities the default
	// Client trusts (the system's and --outbound-ca-file's): for pushes,
	// token fetches and handshakes. nil: the system's.
	RootCAs *x509.CertPool
	// Tokens fetches and caches the OAuth2 tokens of subscriptions with
	// oauth2_client_credentials auth (default oauth2.New(Client, Clock.Now)).
	Tokens *oauth2.Cache
	// UserAgent is sent with every attempt (default "Herald").
	UserAgent string
	// Rand returns numbers in [0,1) for jitter (default math/rand/v2).
	Rand func() float64
	// Tracer, when tracing is on (nil: off), makes an attempt span per
	// attempt, whose W3C traceparent the push carries (tracing.go).
	Tracer *tracing.Tracer
}

// DefaultConfig returns the stage's defaults: the one place they are set.
func DefaultConfig() Config {
	return Config{StoreTimeout: 30 * time.Second, MaxIdleConns: 1024, UserAgent: "Herald"}
}

// setDefaults fills zero fields.
func (c *Config) setDefaults() {
	d := DefaultConfig()
	if c.Clock == nil {
		c.Clock = clock.Real{}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Metrics == nil {
		c.Metrics = NewMetrics(nil)
	}
	if c.StoreTimeout <= 0 {
		c.StoreTimeout = d.StoreTimeout
	}
	if c.MaxIdleConns <= 0 {
		c.MaxIdleConns = d.MaxIdleConns
	}
	if c.Client == nil {
		c.Client = NewHTTPClient(c.Destinations, c.Resolver, c.MaxIdleConns)
		if c.RootCAs != nil {
			c.Client.Transport.(*http.Transport).TLSClientConfig = &tls.Config{RootCAs: c.RootCAs}
		}
	}
	if c.Tokens == nil {
		c.Tokens = oauth2.New(c.Client, c.Clock.Now)
	}
	if c.UserAgent == "" {
		c.UserAgent = d.UserAgent
	}
	if c.Rand == nil {
		c.Rand = rand.Float64
	}
}

// Attempter makes attempts. It is safe for concurrent use.
type Attempter struct {
	cfg     Config
	log     *slog.Logger
	running registry
	certs   certClients // the clients of mTLS subscriptions
	stamps  unixStamps  // Webhook-Timestamp values
	// brokerConns are the connections of broker destinations (broker.go).
	brokerConns brokerPool
	// attemptsCtx is every request's parent; Abandon cancels it.
	attemptsCtx context.Context
	cancel      context.CancelFunc
}

// New returns an Attempter.
func New(cfg Config) *Attempter {
	cfg.setDefaults()
	ctx, cancel := context.WithCancel(context.Background())
	a := &Attempter{cfg: cfg, log: cfg.Logger.With("component", "attempting"), attemptsCtx: ctx, cancel: cancel}
	a.running.init()
	return a
}

// Config returns the configuration, defaults filled in.
func (a *Attempter) Config() Config { return a.cfg }

// Abandon cuts every attempt in progress short and makes later ones give
// up at once (a hard stop: the server's close ran out of time). Nothing is
// recorded for an abandoned attempt: its deliveries are given back.
func (a *Attempter) Abandon() { a.cancel() }

// Job is one attempt to make: the deliveries of one subscription (one, or
// a batch), the first one first, and whether it probes a closed circuit.
type Job struct {
	Deliveries []*store.Claimed
	Probe      bool
}

// Exchange is what an attempt tells the scheduler once its HTTP exchange is
// over.
type Exchange struct {
	// Health is what the attempt said of the endpoint's health when
	// Observed; nothing when no request was made, or one that failed
	// before anything was sent.
	Health   health.Outcome
	Observed bool
	// URL is the endpoint's URL ("" when unknown).
	URL string
	// Duration is how long the HTTP exchange took, from the request's
	// start to its response's body read (0: no request was made).
	Duration time.Duration
	// GiveBack lists the deliveries (indexes into Job.Deliveries) that
	// were neither attempted nor recorded: the scheduler gives them back
	// to the store, to be attempted again later.
	GiveBack []int
	// ReturnProbe: the job was a probe and sent nothing; the scheduler
	// gives back its hold on the endpoint's next probe.
	ReturnProbe bool
	// Record are the outcomes to write, one per delivery neither given
	// back nor cut short: the scheduler hands them to the recording stage
	// once it has applied the rest.
	Record []recording.Request
}

// Validate reports the first setting that makes no sense, naming it as
// herald serve's flag does.
func (c Config) Validate() error {
	for _, p := range c.Destinations.Allow {
		if !p.IsValid() {
			return errors.New("--allow-destinations: an invalid range")
		}
	}
	return nil
}
