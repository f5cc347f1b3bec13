package api

import (
	"log/slog"
	"net/http"
	"strconv"
	"sync"

	"github.com/herald-events/herald/internal/clock"
)

// receiveSlots bounds the receives of each account that wait (a long
// poll: max_wait, or Event Grid's maxWaitTime, above 0) at once: a waiting
// receive holds a connection for up to a minute (two on Event Grid's
// route), so that one account's consumers could otherwise hold every
// connection of the server (--max-connections). A receive that does not
// wait is not counted. The count is this process's, as the connections
// are.
type receiveSlots struct {
	max int // 0: no bound
	log *capLog

	mu      sync.Mutex
	waiting map[string]int // by account
}

// receivesLine is the message of receiveSlots' coalesced warn line
// (docs/monitoring.md).
const receivesLine = "receives refused (429): an account holds --max-receives-per-account waiting receives"

func newReceiveSlots(max int, s *Server) *receiveSlots {
	log := newCapLog(s.Logger, receivesLine)
	log.clock = s.Clock
	if log.clock == nil {
		log.clock = clock.Real{}
	}
	return &receiveSlots{max: max, log: log, waiting: map[string]int{}}
}

// take counts one more waiting receive of account, unless it holds max
// already; then it answers 429 with Retry-After and returns false. Give
// the place back with give.
func (s *receiveSlots) take(w http.ResponseWriter, r *http.Request, account string) bool {
	if s.max <= 0 {
		return true
	}
	s.mu.Lock()
	n := s.waiting[account]
	if n < s.max {
		s.waiting[account] = n + 1
	}
	s.mu.Unlock()
	if n < s.max {
		return true
	}
	s.log.hit(slog.String("account", account), slog.Int("max_receives_per_account", s.max))
	w.Header().Set("Retry-After", retryAfter)
	writeProblem(w, Problem{Type: probLimit, Title: "Too many requests", Status: http.StatusTooManyRequests,
		Detail: "account " + account + " already has " + strconv.Itoa(s.max) + " receives waiting on this server (its --max-receives-per-account); " +
			"retry after Retry-After seconds, or receive with no wait"})
	return false
}

// give gives back a place take counted.
func (s *receiveSlots) give(account string) {
	if s.max <= 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if n := s.waiting[account] - 1; n > 0 {
		s.waiting[account] = n
	} else {
		delete(s.waiting, account)
	}
}
