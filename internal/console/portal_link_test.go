package console_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/account"
	"github.com/herald-events/herald/internal/clock"
	"github.com/herald-events/herald/internal/console"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/store/sqlite"
)

// TestPortalLinkAndCookie: a link begins with the public URL and expires
// ttl after it is made; with an https public URL the portal's cookie is
// Secure, SameSite=None for an account whose portal other sites may frame
// and Lax otherwise, and lasts until the expiry (Max-Age, by the
// server's clock).
func TestPortalLinkAndCookie(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "herald.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	framed := account.Account{ID: "acc_framed", Name: "framed", CreatedAt: start, UpdatedAt: start,
		Settings: account.Settings{PortalFrameAncestors: []string{"https://app.example.com"}}}
	plain := account.Account{ID: "acc_plain", Name: "plain", CreatedAt: start, UpdatedAt: start}
	for _, a := range []account.Account{framed, plain} {
		if err := st.CreateAccount(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	clk := clock.NewFake(start)
	p := &console.Portal{Store: st, PublicURL: "https://herald.example/", Clock: clk}
	web := httptest.NewServer(p.Handler())
	t.Cleanup(web.Close)
	for _, c := range []struct {
		acc  string
		same http.SameSite
	}{{framed.ID, http.SameSiteNoneMode}, {plain.ID, http.SameSiteLaxMode}} {
		expires := clk.Now().Add(2 * time.Hour)
		link, err := p.NewLink(ctx, []byte("key-hash"), "key_x", store.PortalScope{AccountID: c.acc}, 2*time.Hour)
		if err != nil || !strings.HasPrefix(link.URL, "https://herald.example/portal/") || !link.ExpiresAt.Equal(expires) {
			t.Fatalf("NewLink = %+v, %v", link, err)
		}
		clk.Advance(time.Hour)
		client := web.Client()
		client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
		resp, err := client.Get(web.URL + strings.TrimPrefix(link.URL, "https://herald.example"))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		ck := portalCookie(page{header: resp.Header})
		if resp.StatusCode != http.StatusSeeOther || ck == nil || !ck.Secure || ck.SameSite != c.same || ck.MaxAge != 3600 {
			t.Fatalf("%s's link: %d, cookie %+v; want Secure, SameSite %v, Max-Age 3600", c.acc, resp.StatusCode, ck, c.same)
		}
	}
}
