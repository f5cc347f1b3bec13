package main

import (
	"context"
	"encoding/json"
	"runtime/debug"
	"strings"
	"testing"
)

func TestReadBuild(t *testing.T) {
	vcs := []debug.BuildSetting{
		{Key: "-buildmode", Value: "exe"},
		{Key: "vcs", Value: "git"},
		{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"},
		{Key: "vcs.time", Value: "2026-11-20T10:00:00Z"},
		{Key: "vcs.modified", Value: "true"},
	}
	dev := stamp{Version: "dev"}
	release := stamp{Version: "v1.6.0", Commit: "fedcba9876543210fedcba9876543210fedcba98", Date: "2026-11-25T09:00:00Z", Modified: "false"}
	tests := []struct {
		name  string
		stamp stamp
		bi    *debug.BuildInfo
		want  []string // in the line
		short string
	}{
		{"go run (no build information recorded)", dev, &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}},
			[]string{"herald dev (go1.26.8; no commit recorded"}, "dev"},
		{"go build in a checkout", dev, &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: vcs},
			[]string{"herald dev (go1.26.8; commit 0123456789abcdef0123456789abcdef01234567, 2026-11-20T10:00:00Z, with uncommitted changes)"}, "dev+0123456789ab"},
		{"go install module@version", dev, &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.4.0"}},
			[]string{"herald v1.4.0 (go1.26.8;"}, "v1.4.0"},
		{"version alone with -ldflags", stamp{Version: "v1.5.0"}, &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.4.0"}, Settings: vcs[:4]},
			[]string{"herald v1.5.0 (go1.26.8; commit 0123456789abcdef0123456789abcdef01234567, 2026-11-20T10:00:00Z)"}, "v1.5.0"},
		{"no build information", dev, nil, []string{"herald dev (go1."}, "dev"},
		{"scripts/release, -buildvcs=false", release, nil,
			[]string{"herald v1.6.0 (go1.", "; commit fedcba9876543210fedcba9876543210fedcba98, 2026-11-25T09:00:00Z)"}, "v1.6.0"},
		{"scripts/release over a recorded commit", release, &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: vcs},
			[]string{"herald v1.6.0 (go1.26.8; commit fedcba9876543210fedcba9876543210fedcba98, 2026-11-25T09:00:00Z)"}, "v1.6.0"},
		{"scripts/release from a modified checkout", stamp{Version: "v1.6.0-dirty", Commit: release.Commit, Modified: "true"}, nil,
			[]string{"herald v1.6.0-dirty (go1.", "; commit fedcba9876543210fedcba9876543210fedcba98, with uncommitted changes)"}, "v1.6.0-dirty"},
	}
	for _, tt := range tests {
		b := readBuild(tt.stamp, tt.bi)
		for _, w := range tt.want {
			if !strings.Contains(b.String(), w) {
				t.Errorf("%s: %q lacks %q", tt.name, b.String(), w)
			}
		}
		if b.short() != tt.short {
			t.Errorf("%s: short %q, want %q", tt.name, b.short(), tt.short)
		}
	}
}

func TestVersionCommand(t *testing.T) {
	var stdout, stderr strings.Builder
	if code := run(context.Background(), []string{"version", "--json"}, &stdout, &stderr); code != 0 {
		t.Fatalf("version --json: exit %d, %s", code, stderr.String())
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(stdout.String()), &got); err != nil || got["version"] == "" || got["go"] == "" {
		t.Fatalf("version --json printed %q (%v)", stdout.String(), err)
	}
	for _, args := range [][]string{{"version"}, {"--version"}} {
		stdout.Reset()
		if code := run(context.Background(), args, &stdout, &stderr); code != 0 || !strings.HasPrefix(stdout.String(), "herald ") {
			t.Errorf("%q: exit %d, %q", args, code, stdout.String())
		}
	}
}
