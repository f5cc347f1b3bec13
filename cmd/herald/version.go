package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"
)

// These are stamped at build time by scripts/release with
// -ldflags "-X main.version=… -X main.commit=… -X main.date=… -X main.modified=…".
// Without a version the module's version is used when the build recorded
// one; without a commit, the commit, its time and the modified flag the Go
// toolchain recorded (see buildInfo).
var (
	version  = "dev"
	commit   = "" // the full commit hash
	date     = "" // the commit's time, RFC 3339
	modified = "" // "true" when the checkout had uncommitted changes
)

// stamp is what -ldflags set: version, commit, date and modified above.
type stamp struct {
	Version, Commit, Date, Modified string
}

// buildInfo says which Herald this is: its version and the commit it was
// built from, when scripts/release stamped it or the Go toolchain recorded it
// (go build or go install in a git checkout; not go run, go test or
// -buildvcs=false).
type buildInfo struct {
	Version  string `json:"version"`
	Go       string `json:"go"`
	Revision string `json:"revision,omitempty"`
	Time     string `json:"time,omitempty"`     // the commit's time, RFC 3339
	Modified *bool  `json:"modified,omitempty"` // the checkout had uncommitted changes
}

// currentBuild reads this binary's build information.
func currentBuild() buildInfo {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		bi = nil
	}
	return readBuild(stamp{version, commit, date, modified}, bi)
}

// readBuild makes a buildInfo from what -ldflags stamped (st.Version "dev"
// and the rest empty when nothing was) and the Go build information bi (nil
// when there is none). A stamped commit wins over the recorded one, and
// with it only the stamped date and modified flag count.
func readBuild(st stamp, bi *debug.BuildInfo) buildInfo {
	b := readRecorded(st.Version, bi)
	if st.Commit == "" {
		return b
	}
	b.Revision, b.Time, b.Modified = st.Commit, st.Date, nil
	if st.Modified != "" {
		m := st.Modified == "true"
		b.Modified = &m
	}
	return b
}

// readRecorded makes a buildInfo from the version ldVersion and what the Go
// toolchain recorded in bi.
func readRecorded(ldVersion string, bi *debug.BuildInfo) buildInfo {
	b := buildInfo{Version: ldVersion, Go: runtime.Version()}
	if bi == nil {
		return b
	}
	if bi.GoVersion != "" {
		b.Go = bi.GoVersion
	}
	if b.Version == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		b.Version = bi.Main.Version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Revision = s.Value
		case "vcs.time":
			b.Time = s.Value
		case "vcs.modified":
			m := s.Value == "true"
			b.Modified = &m
		}
	}
	return b
}

// short is the version for logs and the User-Agent: the version, with the
// commit's first 12 characters when the version is "dev".
func (b buildInfo) short() string {
	if b.Version != "dev" || b.Revision == "" {
		return b.Version
	}
	return b.Version + "+" + b.Revision[:min(12, len(b.Revision))]
}

// String is `herald version`'s line.
func (b buildInfo) String() string {
	if b.Revision == "" {
		return fmt.Sprintf("herald %s (%s; no commit recorded: go run, go test and -buildvcs=false builds record none)", b.Version, b.Go)
	}
	parts := []string{"commit " + b.Revision}
	if b.Time != "" {
		parts = append(parts, b.Time)
	}
	if b.Modified != nil && *b.Modified {
		parts = append(parts, "with uncommitted changes")
	}
	return fmt.Sprintf("herald %s (%s; %s)", b.Version, b.Go, strings.Join(parts, ", "))
}

func newVersionFlags(stderr io.Writer) (*flag.FlagSet, *bool) {
	fs := flag.NewFlagSet("herald version", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print the version as JSON: version, go, and revision, time and modified when stamped or recorded")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "Usage: herald version [--json]\n\nPrints Herald's version, the Go version, and the commit it was built from when a release build stamped it (scripts/release) or the Go toolchain recorded it.\n\n")
		fs.PrintDefaults()
	}
	return fs, asJSON
}

// runVersion implements `herald version`.
func runVersion(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs, asJSON := newVersionFlags(stderr)
	if _, code, ok := parseFlags(fs, args, stdout, stderr, false); !ok {
		return code
	}
	b := currentBuild()
	if !*asJSON {
		fmt.Fprintln(stdout, b)
		return 0
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(b); err != nil {
		fmt.Fprintln(stderr, "herald version:", err)
		return 1
	}
	return 0
}
