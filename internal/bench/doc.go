// Package bench is Herald's end-to-end benchmark, run by `herald bench`:
// the command herald-bench (cmd/herald-bench), a binary of its own so that
// the server's binary does not link this package.
//
// Each scenario measures Herald the way a user would judge it: it starts a
// real `herald serve` child process on a fresh store in a temporary
// directory, starts webhook receivers on loopback in this process (one HTTP
// server per endpoint), creates subscriptions through the API, publishes
// CloudEvents over HTTP like a client, waits until every delivery it expects
// has arrived (and, where no delivery is meant to stay pending, until the
// server lists none pending), and reports what it saw: events accepted per
// second, deliveries per second, publish→receipt latency percentiles, the
// server's peak resident memory and its CPU time per 1,000 deliveries.
//
// # Baseline and soak
//
// With Config.Baseline (herald bench --baseline) the scenarios that can
// (baselineScenarios) are run a second time, right after Herald and with the
// same load and receivers, against a non-durable forwarder built into the
// herald-bench binary and started as a child process like herald serve
// (forwarder.go), and the report gives Herald's deliveries/s and server CPU
// per delivery divided by the forwarder's (compareBaseline). Config.Runs
// repeats everything, the herald/baseline pairs alternating. The soak
// scenario (soak.go, not in "all") runs steady-batch's load until millions
// of deliveries have finished with retention clean-up behind it, and
// compares the deliveries/s of its first and last tenth. The console
// scenario (console.go, not in "all") stores a million deliveries and times
// the console's pages and the API's lists.
//
// # Measuring
//
// Every published event carries its publish time (Unix nanoseconds) in the
// extension attribute "benchsent"; a receiver computes the latency when the
// event arrives. Under an offered rate the publish time is the time the event
// was scheduled, not the time a publisher got round to sending it, so a
// server that falls behind shows it in the latency instead of slowing the
// load down (no coordinated omission). Receivers count each event id once
// per endpoint (duplicates, which at-least-once delivery allows, are counted
// apart). The server's memory and CPU time are read from /proc (Linux only;
// elsewhere they read as zero).
//
// # Bounds
//
// Every wait is bounded by the scenario's deadline; a scenario that does not
// finish by then is reported as failed with what it had counted. The child
// process is killed when its scenario ends, whatever the outcome, and gets
// SIGKILL from the kernel if this process dies first (Linux).
package bench
