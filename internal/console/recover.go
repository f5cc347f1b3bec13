package console

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/herald-events/herald/internal/account"
	"github.com/herald-events/herald/internal/job"
	"github.com/herald-events/herald/internal/store"
)

// recoverRequest reads a Recover form (since, until, a status checkbox
// each) as the API's body of POST /v1/subscriptions/{id}/recover: an empty
// until is none, no status ticked the default statuses.
func recoverRequest(r *http.Request) job.RecoverRequest {
	since := r.PostFormValue("since")
	in := job.RecoverRequest{Since: &since, Statuses: r.PostForm["status"]}
	if until := r.PostFormValue("until"); until != "" {
		in.Until = &until
	}
	return in
}

// recoverSubscription takes the Recover form: a recover job is started as
// the API's POST /v1/subscriptions/{id}/recover starts one (job's
// RecoverRequest, then the control plane's Recover), and the browser goes
// to the job's page. A field that is wrong is a 400 page naming it, and
// nothing is started.
func (sa *subscriptionActions) recoverSubscription(w http.ResponseWriter, r *http.Request, v *visit) {
	sub, ok := sa.ownSubscription(w, r, v)
	if !ok {
		return
	}
	j, perr := recoverRequest(r).Recover(account.OrDefault(sub.AccountID), sub.ID)
	if perr != nil {
		sa.errorPage(w, r, v, http.StatusBadRequest, "Not recovered: "+perr.Field+" "+perr.Detail+".")
		return
	}
	j, err := sa.control.Recover(r.Context(), j)
	if msg, limited := jobLimitReached(w, err); limited {
		sa.errorPage(w, r, v, http.StatusTooManyRequests, msg)
		return
	}
	if sa.gone(w, r, v, sub.ID, err) {
		return
	}
	redirect(w, r, "/console/jobs/"+j.ID)
}

// jobLimitReached reports whether err is a recover refused because the
// account has --max-jobs-per-account jobs running or waiting
// (store.JobLimitError); if so it sets Retry-After (store.RetryAfter, as
// the API does) and returns what the 429 page says.
func jobLimitReached(w http.ResponseWriter, err error) (string, bool) {
	var le *store.JobLimitError
	if !errors.As(err, &le) {
		return "", false
	}
	w.Header().Set("Retry-After", strconv.Itoa(int(store.RetryAfter/time.Second)))
	return "Not recovered: this account already has " + strconv.Itoa(le.Limit) + " jobs running or waiting, the most one account may have " +
		"(the server's --max-jobs-per-account). Try again once one of them has ended.", true
}

// jobView is what the job page shows.
type jobView struct {
	job.Job
	// Running: the page reloads itself to show the progress.
	Running bool
}

// job shows a job and its progress: 404 for one that does not exist, and
// for an account key one of another account.
func (sa *subscriptionActions) job(w http.ResponseWriter, r *http.Request, v *visit) {
	j, ok := own(sa.base, w, r, v, "job", sa.store.GetJob, func(j job.Job) string { return j.AccountID })
	if ok {
		sa.render(w, r, http.StatusOK, "job", v, "Job "+j.ID, jobView{Job: j, Running: !j.Finished()})
	}
}

// recoverSubscription is the portal's Recover form: as the console's, for
// a subscription of the session; the browser goes to the job's page.
func (p portalActions) recoverSubscription(w http.ResponseWriter, r *http.Request, v *portalVisit) {
	sub, ok := p.ownSubscription(w, r, v)
	if !ok {
		return
	}
	j, perr := recoverRequest(r).Recover(account.OrDefault(sub.AccountID), sub.ID)
	if perr != nil {
		p.pages.portalError(w, r, v, http.StatusBadRequest, "Not recovered: "+perr.Field+" "+perr.Detail+".")
		return
	}
	j, err := p.Control.Recover(r.Context(), j)
	if msg, limited := jobLimitReached(w, err); limited {
		p.pages.portalError(w, r, v, http.StatusTooManyRequests, msg)
		return
	}
	if err != nil {
		p.changeError(w, r, v, err)
		return
	}
	redirect(w, r, "/portal/jobs/"+j.ID)
}

// job is the portal's page of a job of the session's subscriptions;
// another's is a 404.
func (p portalActions) job(w http.ResponseWriter, r *http.Request, v *portalVisit) {
	j, ok := portalOwn(p.Portal, w, r, v, "job", p.Store.GetJob, func(j job.Job) (string, string) { return j.AccountID, j.SubscriptionID })
	if ok {
		p.pages.portalRender(w, r, http.StatusOK, "job", v, "Job "+j.ID, jobView{Job: j, Running: !j.Finished()})
	}
}
