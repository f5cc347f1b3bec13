package scheduling

// Data-driven tests of the scheduler (lanes.go and pump.go, with the
// scheduler's parts of admit.go, loader.go, health.go, run.go and
// finish.go), in the style of cockroachdb/datadriven as pebble uses it, with
// the format and parser of internal/datadriven (as
// internal/health/datadriven_test.go uses them): each file testdata/sched*
// is a sequence of cases
//
//	command arg=value flag ...
//	----
//	expected output
//
// separated by blank lines; lines starting with # are comments. All cases of
// a file run in order against one scheduler, so a file reads as a story.
// Times are offsets from a fixed start, written "+90s"; a command without
// at= runs at the time of the last command that had one. Commands drive the
// scheduler directly: no Service loop, goroutine, store or network.
//
// Deliveries are written ID@LANE (d1@a). An attempt started is printed
// d1@a, or d1@a(probe) when sent as a probe; "started: none" when nothing
// started.
//
// Commands (schedCommands):
//
//	config [name=value ...]   a new scheduler at +0s; names: fresh-window,
//	                          load-window, endpoint-window, max-in-flight,
//	                          initial-concurrency, endpoint-concurrency
//	                          (defaults 100 100 10 100 2 4) and the health
//	                          thresholds probation-after, probation-initial,
//	                          probation-max, probe-interval,
//	                          disable-consecutive (health.DefaultConfig()
//	                          otherwise). Prints the config.
//	reset                     a new scheduler at +0s, same config.
//	known LANE... [at=]       the health sync read these lanes' stored health:
//	                          enabled (adopt, then pump, as
//	                          healthSync.adoptAll does).
//	health LANE state=S [next-probe=+T] [delay=D] [consecutive=N] [at=]
//	                          the health sync merged this lane's outcomes and
//	                          adopted the stored health given (queued
//	                          outcomes cleared, adopt, pump: adoptAll).
//	                          Prints the deliveries released and the
//	                          attempts started.
//	admit [as=NAME] LANE... [at=]
//	                          Service.Reserve: prints the place granted for
//	                          each lane given ("-": refused) and why each
//	                          refusal is due by the documented rule (the
//	                          runner works that out itself, so a grant or a
//	                          refusal the rule does not explain is shown).
//	                          The admission stays pending under NAME
//	                          (default "_").
//	commit [as=NAME] ID... [at=]
//	                          Reservation.Commit's work on the scheduler: the
//	                          IDs fill the granted places in order (fewer
//	                          IDs: the rest were duplicates, their places go
//	                          back); the refused lanes are hinted as written
//	                          unleased at the commit time. Prints what
//	                          started.
//	abort [as=NAME]           Reservation.Abort.
//	offer ID@LANE... [at=]    admit, then commit every granted delivery.
//	load LANE ID... [attempts=N] [at=]
//	                          deliveries the loader claimed for LANE, as
//	                          claimed() leaves them (places taken within
//	                          LoadWindow and EndpointWindow, the lane's next
//	                          due time untouched), then pump. Set-up for
//	                          retries; attempts default 1.
//	hint LANE due=+T          scheduler.hint; prints whether it lowered the
//	                          lane's next due time.
//	wants [at=]               loader.wants: the claims reserved, by lane.
//	claim LANE ID... [attempts=N] [err] [next=+T] [at=]
//	                          loader.claimed for LANE's claim from the last
//	                          wants: these deliveries (attempts default 1),
//	                          err: the claim failed, next: the store has more
//	                          due at T. Prints what started and the lane's
//	                          next due time.
//	pump [at=]                scheduler.pump.
//	ready LANE...             scheduler.markReady (what the loader does for a
//	                          lane whose probe came due); prints the ring.
//	end ID ok|fail|gone|none [rtt=D] [at=]
//	                          scheduler.attemptEnded for a running attempt
//	                          (the outcome carries the probe mark the attempt
//	                          was started with; none: nothing observed; rtt:
//	                          the exchange's time, default 0: unknown).
//	                          Prints the lane after it, the transition, the
//	                          deliveries released, the flags and what
//	                          started.
//	finish ID [next=+T] [at=] scheduler.finished after the outcome was
//	                          recorded (next: pending again, due at T).
//	                          Prints "wake" or "no wake".
//	evict [at=]               scheduler.evictIdle; prints the lanes dropped.
//	drain                     scheduler.drain; prints the IDs given back.
//	held [at=]                leaseKeeper.heldIDs at the time (the leases a
//	                          lease keeper's round would renew), sorted.
//	                          Every delivery is leased for schedTestLease
//	                          from when it was committed, loaded or claimed.
//	renew [lost=ID,...] [at=] a lease keeper's round without its store: the
//	                          leases held renews, those of lost taken over
//	                          by another node (leaseKeeper.settle). Prints
//	                          those renewed and the number dropped.
//	state                     every lane, the ready ring and the totals.
//
// After every command the runner checks the scheduler's bookkeeping against
// the deliveries it was given (schedRunner.check): the global counters are
// the sums of what the lanes and pending admissions and claims hold, no
// bound is exceeded, the ready ring holds each lane at most once.
//
// Run with -rewrite to replace every expected output by the actual one, then
// review the diff against the rules (the doc comments of lanes.go and
// pump.go, and of the scheduler's methods the command calls) before
// committing:
//
//	go test ./internal/scheduling -run SchedDataDriven -rewrite

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/datadriven"
	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/endpoint"
	"github.com/herald-events/herald/internal/health"
	"github.com/herald-events/herald/internal/startstop"
	"github.com/herald-events/herald/internal/store"
)

var ddStart = time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)

func TestSchedDataDriven(t *testing.T) {
	datadriven.Walk(t, filepath.Join("testdata", "sched*"), runSchedFile)
}

func runSchedFile(t *testing.T, path string) {
	r := newSchedRunner(defaultSchedTestConfig())
	datadriven.RunFile(t, path, func(c *datadriven.Case) (string, error) {
		got, err := r.do(c.Cmd)
		if err != nil {
			return "", err
		}
		if err := r.check(); err != nil {
			return "", fmt.Errorf("bookkeeping: %v\n%s", err, dumpSched(r.s))
		}
		return got, nil
	})
}

// --- The runner.

func defaultSchedTestConfig() schedConfig {
	return schedConfig{
		FreshWindow: 100, LoadWindow: 100, EndpointWindow: 10, MaxInFlight: 100,
		InitialConcurrency: 2, EndpointConcurrency: 4,
		Health: health.DefaultConfig(),
	}
}

// schedRunner holds a file's scheduler, clock and what the test handed it.
// The commands on the scheduler itself are its methods; the publish side
// (admit, commit, abort, offer) is adms, the loader's side (load, hint,
// wants, claim) is loads.
type schedRunner struct {
	cfg schedConfig
	s   *scheduler
	e   *Service // only what the commands use: see testService
	now time.Time

	adms  *schedAdmissions          // pending admissions
	loads *schedLoads               // claims reserved by wants and not yet claimed
	runs  map[string]*schedRun      // attempts started and not finished, by ID
	items map[string]*store.Claimed // every delivery handed to the scheduler, by ID
}

type schedRun struct {
	st    start
	ended bool // attemptEnded was called
}

func newSchedRunner(cfg schedConfig) *schedRunner {
	r := &schedRunner{}
	r.init(cfg)
	return r
}

// init gives the runner a new scheduler with cfg at +0s and forgets what
// the old one was handed. The runner's parts point back at it, so a runner
// is reset in place, never copied.
func (r *schedRunner) init(cfg schedConfig) {
	s := newScheduler(cfg)
	*r = schedRunner{
		cfg: cfg, s: s, now: ddStart,
		e:     testService(s),
		runs:  map[string]*schedRun{},
		items: map[string]*store.Claimed{},
	}
	r.adms = &schedAdmissions{r: r, pending: map[string]*schedAdm{}}
	r.loads = &schedLoads{r: r, reserved: map[string]claimWant{}}
}

// testService is a Service around s with only what the scheduler's tests
// use: Reserve (its health loop never starts), the loader's wants and
// claimed, the lease keeper's heldIDs. Nothing runs on it.
func testService(s *scheduler) *Service {
	return &Service{
		sched:  s,
		health: &healthSync{sched: s, loop: startstop.NewLoop("health", nil, nil)},
		loader: &loader{sched: s},
		keeper: &leaseKeeper{sched: s},
	}
}

// commitAdmission is Reservation.Commit without launching the attempts,
// releasing in the store or kicking the loader (which need a running
// engine): it returns what Commit would act on.
func commitAdmission(a *Reservation, held []store.Claimed, unheld []string, at, now time.Time) (starts []start, released []string, wake bool) {
	a.once.Do(func() {
		starts, released, wake = a.s.sched.commit(a.lanes, a.n, held, unheld, at, now.Add(schedTestLease), now)
	})
	return starts, released, wake
}

// schedCommand is a command of the files (see the top of this file).
type schedCommand struct {
	run        func(r *schedRunner, a datadriven.Args) (string, error)
	positional bool // takes arguments other than name=value and flags
	restart    bool // makes a new scheduler at +0s: takes no at=
}

var schedCommands = map[string]schedCommand{
	"config": {run: (*schedRunner).config, restart: true},
	"reset":  {run: (*schedRunner).reset, restart: true},
	"known":  {run: (*schedRunner).known, positional: true},
	"health": {run: (*schedRunner).health, positional: true},
	"admit":  {run: onAdms((*schedAdmissions).admit), positional: true},
	"commit": {run: onAdms((*schedAdmissions).commit), positional: true},
	"abort":  {run: onAdms((*schedAdmissions).abort)},
	"offer":  {run: onAdms((*schedAdmissions).offer), positional: true},
	"load":   {run: onLoads((*schedLoads).load), positional: true},
	"hint":   {run: onLoads((*schedLoads).hint), positional: true},
	"wants":  {run: onLoads((*schedLoads).wants)},
	"claim":  {run: onLoads((*schedLoads).claim), positional: true},
	"pump":   {run: (*schedRunner).pump},
	"ready":  {run: (*schedRunner).ready, positional: true},
	"end":    {run: (*schedRunner).end, positional: true},
	"finish": {run: (*schedRunner).finish, positional: true},
	"evict":  {run: (*schedRunner).evict},
	"drain":  {run: (*schedRunner).drain},
	"held":   {run: schedHeld},
	"renew":  {run: schedRenew},
	"state": {run: func(r *schedRunner, _ datadriven.Args) (string, error) {
		return dumpSched(r.s), nil
	}},
}

// onAdms makes a command of a method of the runner's publish side.
func onAdms(f func(*schedAdmissions, datadriven.Args) (string, error)) func(*schedRunner, datadriven.Args) (string, error) {
	return func(r *schedRunner, a datadriven.Args) (string, error) { return f(r.adms, a) }
}

// onLoads makes a command of a method of the runner's loader side.
func onLoads(f func(*schedLoads, datadriven.Args) (string, error)) func(*schedRunner, datadriven.Args) (string, error) {
	return func(r *schedRunner, a datadriven.Args) (string, error) { return f(r.loads, a) }
}

// do runs one command line: it sets the clock from at= (but for the
// commands that restart), runs the command and fails on an argument it
// did not take.
func (r *schedRunner) do(line string) (string, error) {
	fields := strings.Fields(line)
	a := datadriven.ParseArgs(fields[1:], "ok", "fail", "gone", "none", "err")
	cmd, ok := schedCommands[fields[0]]
	if !cmd.restart {
		var err error
		if r.now, err = a.Offset("at", ddStart, false, r.now); err != nil {
			return "", err
		}
	}
	if !ok {
		return "", fmt.Errorf("unknown command %q", fields[0])
	}
	out, err := cmd.run(r, a)
	if err != nil {
		return "", err
	}
	if len(a.Pos) > 0 && !cmd.positional {
		return "", fmt.Errorf("unexpected arguments %v", a.Pos)
	}
	return out, a.Unused()
}

func (r *schedRunner) reset(datadriven.Args) (string, error) {
	r.init(r.cfg)
	return "ok", nil
}

func (r *schedRunner) config(a datadriven.Args) (string, error) {
	c, err := parseSchedConfig(a)
	if err != nil {
		return "", err
	}
	r.init(c)
	return fmtSchedConfig(c), nil
}

// parseSchedConfig reads the fields of the config command over
// defaultSchedTestConfig.
func parseSchedConfig(a datadriven.Args) (schedConfig, error) {
	c := defaultSchedTestConfig()
	ints := map[string]*int{
		"fresh-window": &c.FreshWindow, "load-window": &c.LoadWindow, "endpoint-window": &c.EndpointWindow,
		"max-in-flight": &c.MaxInFlight, "initial-concurrency": &c.InitialConcurrency,
		"endpoint-concurrency": &c.EndpointConcurrency,
	}
	for _, k := range a.Names() {
		v, _ := a.Value(k)
		var err error
		if p := ints[k]; p != nil {
			*p, err = strconv.Atoi(v)
		} else {
			switch k {
			case "probation-after":
				c.Health.ProbationAfter, err = strconv.ParseInt(v, 10, 64)
			case "disable-consecutive":
				c.Health.DisableConsecutive, err = strconv.ParseInt(v, 10, 64)
			case "probation-initial":
				c.Health.ProbationInitial, err = time.ParseDuration(v)
			case "probation-max":
				c.Health.ProbationMax, err = time.ParseDuration(v)
			case "probe-interval":
				c.Health.ProbeInterval, err = time.ParseDuration(v)
			default:
				return c, fmt.Errorf("unknown config field %q", k)
			}
		}
		if err != nil {
			return c, fmt.Errorf("%s=%s: %v", k, v, err)
		}
	}
	if len(a.Pos) > 0 {
		return c, fmt.Errorf("unexpected arguments %v", a.Pos)
	}
	return c, nil
}

func fmtSchedConfig(c schedConfig) string {
	h := c.Health
	return fmt.Sprintf("fresh-window=%d load-window=%d endpoint-window=%d max-in-flight=%d\n"+
		"initial-concurrency=%d endpoint-concurrency=%d\n"+
		"probation-after=%d probation-initial=%s probation-max=%s disable-consecutive=%d probe-interval=%s",
		c.FreshWindow, c.LoadWindow, c.EndpointWindow, c.MaxInFlight,
		c.InitialConcurrency, c.EndpointConcurrency,
		h.ProbationAfter, fmtDur(h.ProbationInitial), fmtDur(h.ProbationMax), h.DisableConsecutive, fmtDur(h.ProbeInterval))
}

// adoptAll is the scheduler's part of healthSync.adoptAll: adopt every stored
// endpoint, then pump.
func (r *schedRunner) adoptAll(eps []endpoint.Endpoint) (string, error) {
	s := r.s
	var released []string
	s.mu.Lock()
	for _, ep := range eps {
		released = append(released, s.adopt(s.laneFor(ep.ID), ep, r.now)...)
	}
	starts := s.pump(r.now, nil)
	s.mu.Unlock()
	out := ""
	if len(released) > 0 {
		if err := r.released(released); err != nil {
			return "", err
		}
		out = "released: " + list(released) + "\n"
	}
	st, err := r.started(starts)
	return out + st, err
}

func (r *schedRunner) known(a datadriven.Args) (string, error) {
	if len(a.Pos) == 0 {
		return "", errors.New("known: want lanes")
	}
	var eps []endpoint.Endpoint
	for _, id := range a.Pos {
		ep := endpoint.Endpoint{ID: id}
		ep.Health.State = health.Enabled
		eps = append(eps, ep)
	}
	return r.adoptAll(eps)
}

func (r *schedRunner) health(a datadriven.Args) (string, error) {
	if len(a.Pos) != 1 {
		return "", errors.New("health: want one lane")
	}
	id := a.Pos[0]
	ep := endpoint.Endpoint{ID: id}
	st, ok := a.Value("state")
	if !ok {
		return "", errors.New("health: state= is required")
	}
	ep.Health.State = health.State(st)
	var err error
	if ep.Health.NextProbeAt, err = a.Offset("next-probe", ddStart, false, time.Time{}); err != nil {
		return "", err
	}
	if v, ok := a.Value("delay"); ok {
		if ep.Health.ProbationDelay, err = time.ParseDuration(v); err != nil {
			return "", err
		}
	}
	n, err := a.Int("consecutive", 0)
	if err != nil {
		return "", err
	}
	ep.Health.ConsecutiveFailures = int64(n)
	// The merge wrote the queued outcomes into the stored health given.
	r.s.mu.Lock()
	if l := r.s.lanes[id]; l != nil {
		l.pending = nil
	}
	r.s.mu.Unlock()
	return r.adoptAll([]endpoint.Endpoint{ep})
}

func (r *schedRunner) pump(datadriven.Args) (string, error) {
	r.s.mu.Lock()
	starts := r.s.pump(r.now, nil)
	r.s.mu.Unlock()
	return r.started(starts)
}

func (r *schedRunner) ready(a datadriven.Args) (string, error) {
	s := r.s
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range a.Pos {
		l := s.lanes[id]
		if l == nil {
			return "", fmt.Errorf("no lane %s", id)
		}
		s.markReady(l)
	}
	return ringLine(s), nil
}

func (r *schedRunner) evict(datadriven.Args) (string, error) {
	before := sortedLaneIDs(r.s)
	n := r.s.evictIdle(r.now)
	var gone []string
	for _, id := range before {
		if r.s.lanes[id] == nil {
			gone = append(gone, id)
		}
	}
	if len(gone) != n {
		return "", fmt.Errorf("evictIdle says %d, lanes dropped: %v", n, gone)
	}
	return "evicted: " + list(gone), nil
}

func (r *schedRunner) drain(datadriven.Args) (string, error) {
	ids := r.s.drain()
	for _, id := range ids {
		if r.runs[id] != nil {
			return "", fmt.Errorf("drain gave back %s, which is running", id)
		}
	}
	slices.Sort(ids)
	return "released: " + list(ids), nil
}

// schedTestLease is the lease of the deliveries the files hand over.
const schedTestLease = 30 * time.Second

// schedHeld is the held command (not a method: the runner has enough).
func schedHeld(r *schedRunner, _ datadriven.Args) (string, error) {
	ids := r.e.keeper.heldIDs(renewBy(r.now, schedTestLease))
	slices.Sort(ids)
	return "held: " + list(ids), nil
}

// schedRenew is the renew command.
func schedRenew(r *schedRunner, a datadriven.Args) (string, error) {
	lost := map[string]bool{}
	if v, ok := a.Value("lost"); ok {
		for _, id := range strings.Split(v, ",") {
			lost[id] = true
		}
	}
	ids := r.e.keeper.heldIDs(renewBy(r.now, schedTestLease))
	asked, kept := map[string]bool{}, map[string]bool{}
	var renewed []string
	for _, id := range ids {
		asked[id] = true
		if !lost[id] {
			kept[id] = true
			renewed = append(renewed, id)
		}
	}
	dropped := r.e.keeper.settle(asked, kept, r.now.Add(schedTestLease))
	slices.Sort(renewed)
	return fmt.Sprintf("renewed: %s\ndropped: %d", list(renewed), dropped), nil
}

func (r *schedRunner) newItem(id, lane string, attempts int) (store.Claimed, error) {
	if r.items[id] != nil {
		return store.Claimed{}, fmt.Errorf("delivery %s given twice", id)
	}
	c := store.Claimed{Delivery: delivery.Delivery{ID: id, EndpointID: lane, Attempts: attempts}}
	r.items[id] = &c
	return c, nil
}

// newItems is newItem for each of ids.
func (r *schedRunner) newItems(ids []string, lane string, attempts int) ([]store.Claimed, error) {
	var cs []store.Claimed
	for _, id := range ids {
		c, err := r.newItem(id, lane, attempts)
		if err != nil {
			return nil, err
		}
		cs = append(cs, c)
	}
	return cs, nil
}

func (r *schedRunner) runOf(a datadriven.Args) (*schedRun, string, error) {
	if len(a.Pos) != 1 {
		return nil, "", errors.New("want one delivery ID")
	}
	id := a.Pos[0]
	run := r.runs[id]
	if run == nil {
		return nil, "", fmt.Errorf("%s is not running", id)
	}
	return run, id, nil
}

func (r *schedRunner) end(a datadriven.Args) (string, error) {
	run, id, err := r.runOf(a)
	if err != nil {
		return "", err
	}
	if run.ended {
		return "", fmt.Errorf("%s already ended", id)
	}
	var obs *health.Outcome
	switch ok, fail, gone, none := a.Flag("ok"), a.Flag("fail"), a.Flag("gone"), a.Flag("none"); {
	case ok && !fail && !gone && !none:
		obs = &health.Outcome{Success: true}
	case fail && !ok && !gone && !none:
		obs = &health.Outcome{}
	case gone && !ok && !fail && !none:
		obs = &health.Outcome{Gone: true}
	case none && !ok && !fail && !gone:
	default:
		return "", errors.New("want exactly one of ok, fail, gone, none")
	}
	if obs != nil {
		obs.At = r.now
		obs.Probe = run.st.it.probe // as attempting.Attempter.Attempt marks it
	}
	var rtt time.Duration
	if v, ok := a.Value("rtt"); ok {
		if rtt, err = time.ParseDuration(v); err != nil {
			return "", fmt.Errorf("rtt=%s: %w", v, err)
		}
	}
	run.ended = true
	l := run.st.l
	en := r.s.attemptEnded(l, obs, rtt, "", r.now)
	r.s.mu.Lock()
	lines := []string{laneLine(l)}
	r.s.mu.Unlock()
	if en.tr.Changed() {
		lines = append(lines, "transition: "+fmtTransition(en.tr))
	}
	if len(en.released) > 0 {
		if err := r.released(en.released); err != nil {
			return "", err
		}
		lines = append(lines, "released: "+list(en.released))
	}
	var flags []string
	if en.flush {
		flags = append(flags, "flush")
	}
	if en.wake {
		flags = append(flags, "wake")
	}
	lines = append(lines, "flags: "+list(flags))
	st, err := r.started(en.starts)
	return strings.Join(append(lines, st), "\n"), err
}

func (r *schedRunner) finish(a datadriven.Args) (string, error) {
	run, id, err := r.runOf(a)
	if err != nil {
		return "", err
	}
	if !run.ended {
		return "", fmt.Errorf("%s: finish before end", id)
	}
	next, err := a.Offset("next", ddStart, false, time.Time{})
	if err != nil {
		return "", err
	}
	delete(r.runs, id)
	if r.s.finished(run.st.l, run.st.it, next, r.now) {
		return "wake", nil
	}
	return "no wake", nil
}

// started registers and prints the attempts started.
func (r *schedRunner) started(starts []start) (string, error) {
	var out []string
	for _, st := range starts {
		id := st.it.c.ID
		if r.runs[id] != nil {
			return "", fmt.Errorf("%s started twice", id)
		}
		if r.items[id] == nil {
			return "", fmt.Errorf("%s started, never given", id)
		}
		if st.l.id != st.it.c.EndpointID {
			return "", fmt.Errorf("%s started on lane %s", id, st.l.id)
		}
		r.runs[id] = &schedRun{st: st}
		s := id + "@" + st.l.id
		if st.it.probe {
			s += "(probe)"
		}
		out = append(out, s)
	}
	return "started: " + list(out), nil
}

// released checks deliveries given back: held and not running.
func (r *schedRunner) released(ids []string) error {
	for _, id := range ids {
		if r.items[id] == nil {
			return fmt.Errorf("released %s, never given", id)
		}
		if r.runs[id] != nil {
			return fmt.Errorf("released %s, which is running", id)
		}
	}
	return nil
}

// --- The publish side.

// schedAdmissions is the runner's publish side: the admissions granted and
// not yet committed or aborted, by name, and the commands that make and
// settle them (admit, commit, abort, offer).
type schedAdmissions struct {
	r       *schedRunner
	pending map[string]*schedAdm
}

// schedAdm is an admission: the reservation and the lanes it asked for.
type schedAdm struct {
	a   *Reservation
	eps []string
}

// name is the admission a command names with as= ("_" by default).
func (p *schedAdmissions) name(a datadriven.Args) string {
	if v, ok := a.Value("as"); ok {
		return v
	}
	return "_"
}

// take removes the pending admission a command names and returns it.
func (p *schedAdmissions) take(a datadriven.Args) (*schedAdm, error) {
	name := p.name(a)
	adm := p.pending[name]
	if adm == nil {
		return nil, fmt.Errorf("no pending admission %q", name)
	}
	delete(p.pending, name)
	return adm, nil
}

// places is the number of places granted to the pending admissions.
func (p *schedAdmissions) places() int {
	n := 0
	for _, adm := range p.pending {
		n += adm.a.n
	}
	return n
}

// reasons works out by the documented rule of Service.Reserve (a place
// while the fast path has room, the lane is known and enabled, and it has
// fewer than EndpointWindow first attempts queued or granted to admissions
// not yet committed, this one's included) which of eps are to be refused,
// and why ("" for a grant).
// Caller holds s.mu; call it before Reserve.
func (p *schedAdmissions) reasons(eps []string) []string {
	s := p.r.s
	reasons := make([]string, len(eps))
	held := s.freshHeld
	inCall := map[string]int{}
	for i, id := range eps {
		l := s.lanes[id]
		switch {
		case s.stopping:
			reasons[i] = "stopping"
		case held >= s.cfg.FreshWindow:
			reasons[i] = "fresh window full"
		case l == nil || !l.known:
			reasons[i] = "unknown lane"
		case l.ep.Health.State != health.Enabled:
			reasons[i] = "circuit " + string(l.ep.Health.State)
		case inCall[id]+l.fresh.len()+l.reserved >= s.cfg.EndpointWindow:
			reasons[i] = "endpoint window full"
		default:
			held++
			inCall[id]++
		}
	}
	return reasons
}

// admitNow runs Service.Reserve and describes each refusal; a grant or
// refusal the rule does not explain is written out.
func (p *schedAdmissions) admitNow(eps []string, label func(i int) string) (*Reservation, []string) {
	r := p.r
	r.s.mu.Lock()
	reasons := p.reasons(eps)
	r.s.mu.Unlock()
	adm := r.e.Reserve(eps, r.now)
	var lines []string
	for i := range eps {
		switch g := adm.Granted(i); {
		case g && reasons[i] != "":
			lines = append(lines, fmt.Sprintf("granted: %s, against the rule (%s)", label(i), reasons[i]))
		case !g && reasons[i] == "":
			lines = append(lines, fmt.Sprintf("refused: %s, against the rule (no reason)", label(i)))
		case !g:
			lines = append(lines, fmt.Sprintf("refused: %s (%s)", label(i), reasons[i]))
		}
	}
	return adm, lines
}

func (p *schedAdmissions) admit(a datadriven.Args) (string, error) {
	name := p.name(a)
	if p.pending[name] != nil {
		return "", fmt.Errorf("admission %q is pending", name)
	}
	eps := a.Pos
	adm, lines := p.admitNow(eps, func(i int) string { return fmt.Sprintf("#%d %s", i+1, eps[i]) })
	p.pending[name] = &schedAdm{a: adm, eps: eps}
	g := make([]string, len(eps))
	for i := range eps {
		g[i] = "-"
		if adm.Granted(i) {
			g[i] = eps[i]
		}
	}
	return strings.Join(append([]string{"granted: " + strings.Join(g, " ")}, lines...), "\n"), nil
}

// commitWith commits an admission: ids fill its granted places in order;
// refused lanes are hinted at now.
func (p *schedAdmissions) commitWith(adm *schedAdm, ids []string) (string, error) {
	r := p.r
	var held []store.Claimed
	var unheld []string
	k := 0
	for i, ep := range adm.eps {
		if !adm.a.Granted(i) {
			unheld = append(unheld, ep)
			continue
		}
		if k < len(ids) {
			c, err := r.newItem(ids[k], ep, 0)
			if err != nil {
				return "", err
			}
			held = append(held, c)
			k++
		}
	}
	if k < len(ids) {
		return "", fmt.Errorf("%d IDs for %d granted places", len(ids), k)
	}
	starts, released, wake := commitAdmission(adm.a, held, unheld, r.now, r.now)
	out := ""
	if len(released) > 0 {
		out += "released: " + list(released) + "\n"
		if err := r.released(released); err != nil {
			return "", err
		}
	}
	if len(unheld) > 0 {
		out = "unheld: " + list(unheld)
		if wake {
			out += " (wake the loader)"
		}
		out += "\n"
	}
	st, err := r.started(starts)
	return out + st, err
}

func (p *schedAdmissions) commit(a datadriven.Args) (string, error) {
	adm, err := p.take(a)
	if err != nil {
		return "", err
	}
	return p.commitWith(adm, a.Pos)
}

func (p *schedAdmissions) abort(a datadriven.Args) (string, error) {
	adm, err := p.take(a)
	if err != nil {
		return "", err
	}
	adm.a.Abort()
	return "ok", nil
}

func splitDelivery(s string) (id, lane string, err error) {
	id, lane, ok := strings.Cut(s, "@")
	if !ok || id == "" || lane == "" {
		return "", "", fmt.Errorf("%q: want ID@LANE", s)
	}
	return id, lane, nil
}

func (p *schedAdmissions) offer(a datadriven.Args) (string, error) {
	var ids, eps []string
	for _, d := range a.Pos {
		id, lane, err := splitDelivery(d)
		if err != nil {
			return "", err
		}
		ids, eps = append(ids, id), append(eps, lane)
	}
	adm, lines := p.admitNow(eps, func(i int) string { return ids[i] + "@" + eps[i] })
	var granted []string
	for i := range eps {
		if adm.Granted(i) {
			granted = append(granted, ids[i])
		}
	}
	out, err := p.commitWith(&schedAdm{a: adm, eps: eps}, granted)
	if err != nil {
		return "", err
	}
	return strings.Join(append(lines, out), "\n"), nil
}

// --- The loader's side.

// schedLoads is the runner's loader side: the claims reserved by wants and
// not yet claimed, by lane, and the commands of a load round (load, hint,
// wants, claim).
type schedLoads struct {
	r        *schedRunner
	reserved map[string]claimWant
}

// places is the number of places reserved by the claims not yet claimed.
func (ld *schedLoads) places() int {
	n := 0
	for _, w := range ld.reserved {
		n += w.n
	}
	return n
}

func (ld *schedLoads) load(a datadriven.Args) (string, error) {
	r := ld.r
	if len(a.Pos) < 2 {
		return "", errors.New("load: want a lane and IDs")
	}
	lane, ids := a.Pos[0], a.Pos[1:]
	attempts, err := a.Int("attempts", 1)
	if err != nil {
		return "", err
	}
	s := r.s
	s.mu.Lock()
	l := s.laneFor(lane)
	if s.loadHeld+len(ids) > s.cfg.LoadWindow || l.loaded+len(ids) > s.cfg.EndpointWindow {
		s.mu.Unlock()
		return "", fmt.Errorf("load: %d more would exceed LoadWindow (%d held) or EndpointWindow (%d loaded)", len(ids), s.loadHeld, l.loaded)
	}
	s.mu.Unlock()
	cs, err := r.newItems(ids, lane, attempts)
	if err != nil {
		return "", err
	}
	s.mu.Lock()
	s.loadHeld += len(cs) // what wants reserves and claimed keeps
	for i := range cs {
		s.enqueue(&item{c: cs[i], leaseUntil: r.now.Add(schedTestLease)})
	}
	starts := s.pump(r.now, nil)
	s.mu.Unlock()
	return r.started(starts)
}

func (ld *schedLoads) hint(a datadriven.Args) (string, error) {
	r := ld.r
	if len(a.Pos) != 1 {
		return "", errors.New("hint: want one lane")
	}
	lane := a.Pos[0]
	due, err := a.Offset("due", ddStart, true, time.Time{})
	if err != nil {
		return "", err
	}
	if r.s.hint(lane, due) {
		return "lowered", nil
	}
	return "not lowered", nil
}

func (ld *schedLoads) wants(a datadriven.Args) (string, error) {
	r := ld.r
	if len(ld.reserved) > 0 {
		return "", fmt.Errorf("claims reserved and not claimed: %v", ld.reserved)
	}
	ws, unknown := r.e.loader.wants(r.now)
	slices.SortFunc(ws, func(x, y claimWant) int { return strings.Compare(x.id, y.id) })
	var lines []string
	for _, w := range ws {
		l := fmt.Sprintf("%s n=%d", w.id, w.n)
		if w.probe {
			l += " probe"
		}
		lines = append(lines, l)
		ld.reserved[w.id] = w
	}
	if len(lines) == 0 {
		lines = []string{"none"}
	}
	if unknown {
		lines = append(lines, "unknown lanes due: read their health")
	}
	return strings.Join(lines, "\n"), nil
}

func (ld *schedLoads) claim(a datadriven.Args) (string, error) {
	r := ld.r
	if len(a.Pos) < 1 {
		return "", errors.New("claim: want a lane")
	}
	lane, ids := a.Pos[0], a.Pos[1:]
	w, ok := ld.reserved[lane]
	if !ok {
		return "", fmt.Errorf("no claim reserved for %s", lane)
	}
	if len(ids) > w.n {
		return "", fmt.Errorf("%d deliveries for a claim of %d", len(ids), w.n)
	}
	attempts, err := a.Int("attempts", 1)
	if err != nil {
		return "", err
	}
	var cerr error
	if a.Flag("err") {
		cerr = errors.New("store failed")
	}
	next, err := a.Offset("next", ddStart, false, time.Time{})
	if err != nil {
		return "", err
	}
	cs, err := r.newItems(ids, lane, attempts)
	if err != nil {
		return "", err
	}
	delete(ld.reserved, lane)
	starts, released := r.e.loader.claimed(w, cs, cerr, next, !next.IsZero(), r.now.Add(schedTestLease), r.now)
	out, err := r.started(starts)
	if err != nil {
		return "", err
	}
	if len(released) > 0 {
		out = "released: " + list(released) + "\n" + out
		if err := r.released(released); err != nil {
			return "", err
		}
	}
	r.s.mu.Lock()
	nd := r.s.laneFor(lane).nextDue
	r.s.mu.Unlock()
	return out + "\nnext-due: " + fmtAtOrNone(nd), nil
}

// --- Printing.

// sortedLaneIDs returns the IDs of s's lanes, sorted.
func sortedLaneIDs(s *scheduler) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := make([]string, 0, len(s.lanes))
	for id := range s.lanes {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// laneLine describes a lane. Caller holds s.mu.
func laneLine(l *lane) string {
	state := "unknown"
	if l.known {
		state = string(l.ep.Health.State)
	}
	b := fmt.Sprintf("%s: %s fresh=%s retry=%s in-flight=%d limit=%d held=%d loaded=%d",
		l.id, state, queueIDs(&l.fresh), queueIDs(&l.retry), l.inFlight, l.limit, l.held, l.loaded)
	if h := l.ep.Health; l.known && !h.NextProbeAt.IsZero() {
		b += " next-probe=" + fmtAt(h.NextProbeAt)
	}
	if !l.nextDue.IsZero() {
		b += " next-due=" + fmtAt(l.nextDue)
	}
	if len(l.pending) > 0 {
		b += fmt.Sprintf(" outcomes=%d", len(l.pending))
	}
	if !l.idleSince.IsZero() && l.idle() { // meaningful only while idle
		b += " idle-since=" + fmtAt(l.idleSince)
	}
	return b
}

func queueIDs(q *deque) string {
	var ids []string
	for _, it := range q.buf[q.head:] {
		ids = append(ids, it.c.ID)
	}
	return "[" + strings.Join(ids, " ") + "]"
}

// ringLine describes the ready ring. Caller holds s.mu.
func ringLine(s *scheduler) string {
	var ids []string
	for _, l := range s.ready.buf[s.ready.head:] {
		ids = append(ids, l.id)
	}
	return "ready: " + list(ids)
}

// dumpSched describes every lane, the ready ring and the totals.
func dumpSched(s *scheduler) string {
	ids := sortedLaneIDs(s)
	s.mu.Lock()
	defer s.mu.Unlock()
	var lines []string
	for _, id := range ids {
		lines = append(lines, laneLine(s.lanes[id]))
	}
	lines = append(lines, ringLine(s),
		fmt.Sprintf("fresh-held=%d load-held=%d in-flight=%d", s.freshHeld, s.loadHeld, s.inFlight))
	return strings.Join(lines, "\n")
}

// --- The bookkeeping check.

// check verifies the scheduler's bookkeeping against what the runner handed
// it and took from it: each lane's counters against what it queues and
// runs, the running set against the attempts started, the global counters
// against the sums and the bounds, and the ready ring.
func (r *schedRunner) check() error {
	s := r.s
	s.mu.Lock()
	defer s.mu.Unlock()
	// Places granted and not yet committed or aborted, claims reserved and
	// not yet claimed.
	c := &schedCheck{r: r, s: s, fresh: r.adms.places(), load: r.loads.places(), queued: map[string]bool{}}
	for _, check := range []func() error{c.lanes, c.runs, c.totals, c.ring} {
		if err := check(); err != nil {
			return err
		}
	}
	return nil
}

// schedCheck is one run of check, under s.mu. Its checks run in order and
// add up what the scheduler's global counters must be.
type schedCheck struct {
	r *schedRunner
	s *scheduler

	fresh    int             // held or granted from the publish path
	load     int             // held or reserved by the loader
	inFlight int             // attempts running
	queued   map[string]bool // deliveries seen queued
}

// lanes checks each lane's counters against what it queues and runs.
func (c *schedCheck) lanes() error {
	for id, l := range c.s.lanes {
		if l.id != id {
			return fmt.Errorf("lane %s filed as %s", l.id, id)
		}
		held, loaded, err := c.queues(id, l)
		if err != nil {
			return err
		}
		running := 0
		for _, run := range c.r.runs {
			if run.st.l != l {
				continue
			}
			held++
			if !run.st.it.fromPublish {
				loaded++
			}
			if !run.ended {
				running++
			}
		}
		c.inFlight += running
		if err := c.laneCounters(l, held, loaded, running); err != nil {
			return err
		}
	}
	return nil
}

// queues checks a lane's queued deliveries (each queued once and not
// running, on its own lane, in the queue of its attempt count), adds them
// to the global sums and returns how many the lane holds and how many of
// those came from the loader.
func (c *schedCheck) queues(id string, l *lane) (held, loaded int, err error) {
	for _, q := range []*deque{&l.fresh, &l.retry} {
		for _, it := range q.buf[q.head:] {
			if c.queued[it.c.ID] || c.r.runs[it.c.ID] != nil {
				return 0, 0, fmt.Errorf("%s queued twice, or queued and running", it.c.ID)
			}
			c.queued[it.c.ID] = true
			if it.c.EndpointID != id {
				return 0, 0, fmt.Errorf("%s queued on lane %s", it.c.ID, id)
			}
			if (q == &l.fresh) != (it.c.Attempts == 0) {
				return 0, 0, fmt.Errorf("%s (attempts %d) in the wrong queue", it.c.ID, it.c.Attempts)
			}
			held++
			if it.fromPublish {
				c.fresh++
			} else {
				loaded++
				c.load++
			}
		}
	}
	return held, loaded, nil
}

// laneCounters checks a lane's counters against what it holds (queued and
// running), holds from the loader (the claim reserved for it included)
// and runs, and its limits.
func (c *schedCheck) laneCounters(l *lane, held, loaded, running int) error {
	id, cfg := l.id, c.s.cfg
	if l.inFlight != running {
		return fmt.Errorf("lane %s: inFlight %d, %d attempts running", id, l.inFlight, running)
	}
	if l.held != held {
		return fmt.Errorf("lane %s: held %d, holds %d", id, l.held, held)
	}
	if w, ok := c.r.loads.reserved[id]; ok {
		loaded += w.n
	}
	if l.loaded != loaded {
		return fmt.Errorf("lane %s: loaded %d, holds %d from the loader", id, l.loaded, loaded)
	}
	if l.limit < 1 || l.limit > cfg.EndpointConcurrency {
		return fmt.Errorf("lane %s: limit %d outside [1, %d]", id, l.limit, cfg.EndpointConcurrency)
	}
	if l.inFlight > cfg.EndpointConcurrency {
		return fmt.Errorf("lane %s: %d in flight, more than EndpointConcurrency", id, l.inFlight)
	}
	return nil
}

// runs checks the attempts started and not finished against the running
// set and adds them to the global sums.
func (c *schedCheck) runs() error {
	s := c.s
	for _, run := range c.r.runs {
		if s.lanes[run.st.l.id] != run.st.l {
			return fmt.Errorf("%s runs on lane %s, which was dropped", run.st.it.c.ID, run.st.l.id)
		}
		if s.running[&run.st.it.c] != run.st.it {
			return fmt.Errorf("%s is not in the running set", run.st.it.c.ID)
		}
		if run.st.it.fromPublish {
			c.fresh++
		} else {
			c.load++
		}
	}
	if len(s.running) != len(c.r.runs) {
		return fmt.Errorf("%d in the running set, %d started and not finished", len(s.running), len(c.r.runs))
	}
	return nil
}

// totals checks the global counters against the sums and the bounds.
func (c *schedCheck) totals() error {
	s := c.s
	if s.inFlight != c.inFlight {
		return fmt.Errorf("inFlight %d, %d attempts running", s.inFlight, c.inFlight)
	}
	if s.freshHeld != c.fresh {
		return fmt.Errorf("freshHeld %d, %d held or granted from the publish path", s.freshHeld, c.fresh)
	}
	if s.loadHeld != c.load {
		return fmt.Errorf("loadHeld %d, %d held or reserved by the loader", s.loadHeld, c.load)
	}
	if s.inFlight > s.cfg.MaxInFlight || s.freshHeld > s.cfg.FreshWindow || s.loadHeld > s.cfg.LoadWindow {
		return fmt.Errorf("a bound exceeded: in flight %d, fresh %d, load %d", s.inFlight, s.freshHeld, s.loadHeld)
	}
	return nil
}

// ring checks that the ready ring holds each lane at most once, and
// exactly the lanes marked ready.
func (c *schedCheck) ring() error {
	s := c.s
	inRing := map[*lane]bool{}
	for _, l := range s.ready.buf[s.ready.head:] {
		if inRing[l] {
			return fmt.Errorf("lane %s twice in the ready ring", l.id)
		}
		inRing[l] = true
		if !l.inReady {
			return fmt.Errorf("lane %s in the ready ring, not marked", l.id)
		}
	}
	for id, l := range s.lanes {
		if l.inReady && !inRing[l] {
			return fmt.Errorf("lane %s marked ready, not in the ring", id)
		}
	}
	return nil
}

func list(xs []string) string {
	if len(xs) == 0 {
		return "none"
	}
	return strings.Join(xs, " ")
}

func fmtTransition(tr health.Transition) string {
	return fmt.Sprintf("%s -> %s (%s)", tr.From, tr.To, tr.Reason)
}

func fmtAt(t time.Time) string { return "+" + fmtDur(t.Sub(ddStart)) }

func fmtAtOrNone(t time.Time) string {
	if t.IsZero() {
		return "none"
	}
	return fmtAt(t)
}

// fmtDur is time.Duration.String without trailing zero units: 1h, 5m, 72h0m0.001s.
func fmtDur(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
