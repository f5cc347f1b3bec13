package pgtest

import (
	"fmt"
	"net"
	"os"
	osexec "os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// EnvBin names a directory holding initdb and pg_ctl, for OwnServer; by
// default the newest /usr/lib/postgresql/*/bin, else the PATH's.
const EnvBin = "HERALD_TEST_POSTGRES_BIN"

// Server is a PostgreSQL server of one test's own: a cluster made by
// initdb in a temporary directory and run by pg_ctl on a free port of
// 127.0.0.1 (trust authentication, user postgres), so that the test may
// stop and start it (to show what Herald does while its database is away)
// without touching the shared server of HERALD_TEST_POSTGRES_URL that
// other packages' tests use at the same moment. The server is stopped and
// its directory removed when the test ends.
type Server struct {
	t    testing.TB
	bin  string
	dir  string // holds data/, the log and the Unix socket
	port int
	cred *syscall.Credential // the user the server runs as when the test runs as root
}

// OwnServer makes and starts a Server. Without initdb and pg_ctl (see
// EnvBin), or as root without a "postgres" user to run them as (PostgreSQL
// refuses to run as root), the test is skipped, saying why; under CI
// (CI=true) it fails instead.
func OwnServer(t testing.TB) *Server {
	t.Helper()
	bin, err := pgBin()
	if err != nil {
		skipOrFail(t, "no server of its own: "+err.Error())
	}
	s := &Server{t: t, bin: bin, port: freePort(t)}
	if os.Geteuid() == 0 {
		if s.cred, err = postgresUser(); err != nil {
			skipOrFail(t, "no server of its own: running as root, and "+err.Error())
		}
	}
	if s.dir, err = os.MkdirTemp("", "herald-pg-"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.cleanup() })
	if s.cred != nil {
		if err := os.Chown(s.dir, int(s.cred.Uid), int(s.cred.Gid)); err != nil {
			t.Fatal(err)
		}
	}
	s.run("initdb", "-D", s.data(), "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-locale", "--no-sync")
	s.Start()
	return s
}

// URL is the server's database postgres as user postgres, over TCP.
func (s *Server) URL() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", s.port)
}

// Start starts the server (again) on its port and returns once it accepts
// connections (at most a minute).
func (s *Server) Start() {
	s.t.Helper()
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c max_connections=60 -c shared_buffers=16MB", s.port, s.dir)
	s.run("pg_ctl", "start", "-D", s.data(), "-l", filepath.Join(s.dir, "log"), "-w", "-t", "60", "-o", opts)
}

// Stop stops the server with pg_ctl's mode: "fast" (sessions are ended,
// 57P01 admin_shutdown, and a checkpoint is written) or "immediate" (the
// processes quit at once, as in a crash; the next Start recovers from the
// WAL). It returns once the server has stopped.
func (s *Server) Stop(mode string) {
	s.t.Helper()
	s.run("pg_ctl", "stop", "-D", s.data(), "-m", mode, "-w", "-t", "60")
}

func (s *Server) data() string { return filepath.Join(s.dir, "data") }

// run runs one of the server's programs as the server's user, failing the
// test with its output (and the server's log) when it fails.
func (s *Server) run(prog string, args ...string) {
	s.t.Helper()
	cmd := osexec.Command(filepath.Join(s.bin, prog), args...)
	cmd.Dir = s.dir
	if s.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		logged, _ := os.ReadFile(filepath.Join(s.dir, "log"))
		s.t.Fatalf("%s %s: %v\n%s\nserver log:\n%s", prog, strings.Join(args, " "), err, out, logged)
	}
}

// cleanup stops the server if it runs and removes its directory.
func (s *Server) cleanup() {
	if _, err := os.Stat(filepath.Join(s.data(), "postmaster.pid")); err == nil {
		cmd := osexec.Command(filepath.Join(s.bin, "pg_ctl"), "stop", "-D", s.data(), "-m", "immediate", "-w", "-t", "60")
		if s.cred != nil {
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			s.t.Errorf("stop the test's own PostgreSQL: %v\n%s", err, out)
		}
	}
	_ = os.RemoveAll(s.dir)
}

// pgBin finds the directory of initdb and pg_ctl (see EnvBin).
func pgBin() (string, error) {
	if d := os.Getenv(EnvBin); d != "" {
		return d, nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	p, err := osexec.LookPath("initdb")
	if err != nil {
		return "", fmt.Errorf("initdb is neither in /usr/lib/postgresql/*/bin nor on the PATH (set %s)", EnvBin)
	}
	return filepath.Dir(p), nil
}

// version is the major version of a /usr/lib/postgresql/N/bin directory.
func version(dir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(dir)))
	return n
}

// postgresUser is the credential of the system user "postgres".
func postgresUser() (*syscall.Credential, error) {
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("no \"postgres\" user to run the server as: %v", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// freePort is a TCP port of 127.0.0.1 free a moment ago.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// skipOrFail skips the test saying why, or under CI fails it.
func skipOrFail(t testing.TB, why string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatal(why)
	}
	t.Skip(why)
}
