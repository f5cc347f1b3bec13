package bench

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Bounds of starting and stopping the server.
const (
	startTimeout = 30 * time.Second
	readyTimeout = 30 * time.Second
	killTimeout  = 10 * time.Second
)

// server is a child process the bench measures: a `herald serve`, or the
// baseline forwarder.
type server struct {
	what    string // "herald serve" or "herald-bench forwarder", for messages
	cmd     *exec.Cmd
	pid     int
	url     string // http://ADDR
	dir     string // its working directory: data/ and herald.log
	logPath string
	exited  chan struct{} // closed when the process has been waited for
	waitErr error

	stopOnce sync.Once
	sampler  *sampler
}

// startServer starts `bin serve` on 127.0.0.1:0 with its store in dir/data,
// reads the address it prints ("herald listening on http://ADDR") and waits
// until /readyz answers 200. extra are more serve flags, env more
// environment variables. On error the
// process, if started, is killed.
func startServer(ctx context.Context, bin, dir string, extra, env []string) (*server, error) {
	args := []string{"serve", "--addr", "127.0.0.1:0", "--data", filepath.Join(dir, "data"), "--log-level", "warn"}
	// The benchmark's receivers listen on loopback, which a Herald with a
	// destination guard must be told to allow (an older one has no flag).
	if allow := supported(bin, []string{"--allow-private-destinations", "true"}); len(allow) == 2 {
		args = append(args, allow[0]+"="+allow[1])
	}
	args = append(args, extra...)
	return startChild(ctx, childSpec{what: "herald serve", bin: bin, args: args, dir: dir, log: "herald.log",
		announce: "herald listening on ", env: env})
}

// childSpec is a child process the bench measures: `herald serve`, or the
// baseline forwarder (`herald-bench forwarder`).
type childSpec struct {
	what     string // its name in messages
	bin      string
	args     []string
	dir      string // its working directory
	log      string // file in dir its stderr goes to
	announce string // the prefix of the stdout line that gives its address
	env      []string
}

// startChild starts c, reads the address it prints (a line c.announce
// followed by http://ADDR) and waits until ADDR/readyz answers 200. On
// error the process, if started, is killed.
func startChild(ctx context.Context, c childSpec) (_ *server, err error) {
	logPath := filepath.Join(c.dir, c.log)
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logFile.Close() // the child has its own descriptor
	cmd := exec.Command(c.bin, c.args...)
	cmd.Dir = c.dir
	if len(c.env) > 0 {
		cmd.Env = append(os.Environ(), c.env...)
	}
	cmd.Stderr = logFile
	cmd.SysProcAttr = childAttr()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", c.bin, err)
	}
	s := &server{what: c.what, cmd: cmd, pid: cmd.Process.Pid, dir: c.dir, logPath: logPath, exited: make(chan struct{})}
	defer func() {
		if err != nil {
			s.stop()
			// A refusal's message is its log's first line, already in err.
			if tail := s.logTail(20); tail != "" && !errors.Is(err, errRefused) {
				err = fmt.Errorf("%w\nlast lines of %s:\n%s", err, logPath, tail)
			}
		}
	}()

	addr := make(chan string, 1)
	go func() {
		// Read stdout to its end so the child never blocks writing to it.
		sc := bufio.NewScanner(stdout)
		sent := false
		for sc.Scan() {
			line := sc.Text()
			if rest, ok := strings.CutPrefix(line, c.announce); ok && !sent {
				addr <- strings.TrimSpace(rest)
				sent = true
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
		// StdoutPipe must be read to the end before Wait.
		s.waitErr = cmd.Wait()
		close(s.exited)
	}()

	t := time.NewTimer(startTimeout)
	defer t.Stop()
	select {
	case s.url = <-addr:
	case <-s.exited:
		if ee := (*exec.ExitError)(nil); errors.As(s.waitErr, &ee) && ee.ExitCode() == 2 {
			return nil, fmt.Errorf("%s %w (exit status 2): %s", c.what, errRefused, s.logHead())
		}
		return nil, fmt.Errorf("%s exited before listening: %v", c.what, s.waitErr)
	case <-t.C:
		return nil, fmt.Errorf("%s printed no address within %s", c.what, startTimeout)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if !strings.HasPrefix(s.url, "http://") {
		return nil, fmt.Errorf("%s printed an unexpected address %q", c.what, s.url)
	}
	if err := s.waitReady(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *server) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	c := &http.Client{Timeout: 2 * time.Second}
	var last error
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.url+"/readyz", nil)
		resp, err := c.Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("/readyz answered %s", resp.Status)
		}
		last = err
		select {
		case <-s.exited:
			return fmt.Errorf("%s exited while starting: %v", s.what, s.waitErr)
		case <-ctx.Done():
			return fmt.Errorf("%s not ready within %s: %v", s.what, readyTimeout, last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// alive reports whether the process has not exited.
func (s *server) alive() bool {
	select {
	case <-s.exited:
		return false
	default:
		return true
	}
}

// stop kills the process (SIGKILL: its store is thrown away) and waits for
// it, at most killTimeout.
func (s *server) stop() {
	s.stopOnce.Do(func() {
		if s.sampler != nil {
			s.sampler.stop()
		}
		if s.alive() {
			_ = s.cmd.Process.Kill()
		}
		select {
		case <-s.exited:
		case <-time.After(killTimeout):
		}
	})
}

// logTail returns the last n lines of the server's log.
func (s *server) logTail(n int) string {
	b, err := os.ReadFile(s.logPath)
	if err != nil {
		return ""
	}
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// logHead returns the first line of the server's log: a usage error's
// message, when it refused its flags.
func (s *server) logHead() string {
	b, err := os.ReadFile(s.logPath)
	if err != nil {
		return ""
	}
	line, _, _ := bytes.Cut(b, []byte("\n"))
	return string(line)
}

// errExited is returned by waits that notice the server died.
var errExited = errors.New("the server under test exited")

// errRefused is returned by startChild when the child exited with status 2
// before it listened: herald's usage error, a flag or environment variable
// it refused.
var errRefused = errors.New("refused its flags")

// sampler polls the server's resident memory while a scenario runs.
type sampler struct {
	pid  int
	mu   sync.Mutex
	last Mem
	peak int64 // largest VmRSS seen since reset
	done chan struct{}
	wg   sync.WaitGroup
}

func startSampler(pid int, every time.Duration) *sampler {
	sm := &sampler{pid: pid, done: make(chan struct{})}
	sm.sample()
	sm.wg.Add(1)
	go func() {
		defer sm.wg.Done()
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-sm.done:
				return
			case <-t.C:
				sm.sample()
			}
		}
	}()
	return sm
}

func (sm *sampler) sample() Mem {
	m := procMem(sm.pid)
	sm.mu.Lock()
	if m.RSS > 0 || m.Peak > 0 {
		sm.last = m
	}
	sm.peak = max(sm.peak, m.RSS)
	m = sm.last
	sm.mu.Unlock()
	return m
}

// current returns the last sample.
func (sm *sampler) current() Mem {
	sm.mu.Lock()
	defer sm.mu.Unlock()
	return sm.last
}

// resetPeak starts a new window for windowPeak.
func (sm *sampler) resetPeak() {
	sm.mu.Lock()
	sm.peak = sm.last.RSS
	sm.mu.Unlock()
}

// windowPeak returns the largest VmRSS sampled since resetPeak.
func (sm *sampler) windowPeak() int64 {
	sm.sample()
	sm.mu.Lock()
	defer sm.mu.Unlock()
	return sm.peak
}

func (sm *sampler) stop() {
	select {
	case <-sm.done:
	default:
		close(sm.done)
	}
	sm.wg.Wait()
}

// relaxedHealth are serve flags that put the endpoint circuit's thresholds
// out of reach.
var relaxedHealth = []string{
	"--probation-after", "0",
	"--health-min-attempts", "1000000000000",
	"--health-disable-consecutive", "1000000000000",
	"--health-freeze-stale-consecutive", "1000000000000",
	"--health-freeze-consecutive", "1000000000000",
}

// supported returns the flag/value pairs of flags whose flag `bin serve -h`
// lists.
func supported(bin string, flags []string) []string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, _ := exec.CommandContext(ctx, bin, "serve", "-h").CombinedOutput()
	known := map[string]bool{}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) > 0 && strings.HasPrefix(f[0], "-") {
			known[strings.TrimLeft(f[0], "-")] = true
		}
	}
	var keep []string
	for i := 0; i+1 < len(flags); i += 2 {
		if known[strings.TrimLeft(flags[i], "-")] {
			keep = append(keep, flags[i], flags[i+1])
		}
	}
	return keep
}
