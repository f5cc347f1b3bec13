package attempting

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/catalog"
	"github.com/herald-events/herald/internal/certfile/certtest"
	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/destination"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/subscription"
)

// mtlsReceiver is an HTTPS endpoint on loopback that requires a client
// certificate: presented are the common names of the certificates of
// the requests, in order; closed gets the common name of each connection
// that closes.
type mtlsReceiver struct {
	*httptest.Server
	mu        sync.Mutex
	presented []string
	byConn    map[string]string // remote address: common name
	closed    chan string
}

func newMTLSReceiver(t *testing.T) *mtlsReceiver {
	r := &mtlsReceiver{byConn: map[string]string{}, closed: make(chan string, 2*maxClientCerts)}
	r.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		cn := req.TLS.PeerCertificates[0].Subject.CommonName
		r.mu.Lock()
		r.presented = append(r.presented, cn)
		r.byConn[req.RemoteAddr] = cn
		r.mu.Unlock()
	}))
	r.Config.ConnState = func(c net.Conn, s http.ConnState) {
		if s == http.StateClosed {
			r.mu.Lock()
			cn, ok := r.byConn[c.RemoteAddr().String()]
			r.mu.Unlock()
			if ok {
				r.closed <- cn
			}
		}
	}
	r.TLS = &tls.Config{ClientAuth: tls.RequireAnyClientCert}
	r.StartTLS()
	t.Cleanup(r.Close)
	return r
}

// last is the common name the last request presented.
func (r *mtlsReceiver) last() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.presented[len(r.presented)-1]
}

// TestCertTransportsBound: each distinct client certificate has its own
// transport, and subscriptions with the same certificate share it; 64
// certificates (maxClientCerts) make 64 transports, and the 65th keeps
// the count at 64: one of the others is dropped and its idle connection
// closed (the receiver sees it close), and a push with the dropped
// certificate afterwards makes a transport again, presenting it. Every
// push presents its subscription's certificate.
func TestCertTransportsBound(t *testing.T) {
	rc := newMTLSReceiver(t)
	pool := x509.NewCertPool()
	pool.AddCert(rc.Certificate())
	e := New(Config{Destinations: destination.Policy{AllowPrivate: true}, Owner: "test", RootCAs: pool})
	t.Cleanup(e.Abandon)
	pairs := make([]certtest.Pair, maxClientCerts+1)
	push := func(n int, subID string) *http.Client {
		t.Helper()
		if pairs[n].CertPEM == nil {
			pairs[n] = certtest.New(t, "client-"+strconv.Itoa(n))
		}
		sub, err := catalog.NewEntry(subscription.Subscription{ID: subID, Name: subID, URL: rc.URL, State: subscription.StateActive,
			Delivery: subscription.DeliveryOptions{Auth: &subscription.Auth{Type: subscription.AuthMTLS,
				Certificate: string(pairs[n].CertPEM), PrivateKey: string(pairs[n].KeyPEM)}}})
		if err != nil {
			t.Fatal(err)
		}
		c := newClaimed(t, 10)
		c.SubscriptionID = subID
		outs, _ := attemptOnce(e, sub, []store.Claimed{c})
		if len(outs) != 1 || outs[0].Status != delivery.StatusDelivered || rc.last() != "client-"+strconv.Itoa(n) {
			t.Fatalf("push with certificate %d: %+v; the receiver saw %q", n, outs, rc.last())
		}
		if got := len(e.certs.clients); got > maxClientCerts {
			t.Fatalf("after certificate %d: %d transports, more than %d", n, got, maxClientCerts)
		}
		return e.certs.clients[certKey(sub.Delivery.Auth)]
	}
	clients := map[*http.Client]int{}
	for n := range maxClientCerts {
		clients[push(n, fmt.Sprint("sub_", n))] = n
	}
	if len(e.certs.clients) != maxClientCerts || len(clients) != maxClientCerts {
		t.Fatalf("%d certificates: %d transports kept, %d distinct", maxClientCerts, len(e.certs.clients), len(clients))
	}
	if c := push(0, "sub_other"); clients[c] != 0 || len(e.certs.clients) != maxClientCerts {
		t.Fatalf("a second subscription with certificate 0: its own transport (%d in all)", len(e.certs.clients))
	}

	push(maxClientCerts, "sub_new")
	dropped := -1
	for c, n := range clients {
		if !isKept(e, c) {
			if dropped >= 0 {
				t.Fatalf("certificates %d and %d both dropped", dropped, n)
			}
			dropped = n
		}
	}
	if dropped < 0 || len(e.certs.clients) != maxClientCerts {
		t.Fatalf("certificate %d: %d transports, dropped %d", maxClientCerts, len(e.certs.clients), dropped)
	}
	select {
	case cn := <-rc.closed:
		if cn != "client-"+strconv.Itoa(dropped) {
			t.Fatalf("certificate %d's transport was dropped, but the connection closed is %s's", dropped, cn)
		}
	case <-time.After(30 * time.Second): // a bound on a failing test, not a wait
		t.Fatalf("certificate %d's transport was dropped, but its idle connection stays open", dropped)
	}
	if _, old := clients[push(dropped, "sub_again")]; old {
		t.Fatalf("certificate %d pushed again: no new transport", dropped)
	}
}

// isKept reports whether c is one of e's mTLS transports.
func isKept(e *Attempter, c *http.Client) bool {
	for _, k := range e.certs.clients {
		if k == c {
			return true
		}
	}
	return false
}
