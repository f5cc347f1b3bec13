package client

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// modulePath is the client module's path (client/go.mod).
const modulePath = "github.com/herald-events/herald/client"

// testOnlyModules are the modules the client module may require: its
// tests' YAML decoder (the openapi checks read openapi.yaml) and what that
// requires. The package itself imports the standard library only.
var testOnlyModules = []string{"gopkg.in/yaml.v3", "gopkg.in/check.v1"}

// TestModuleStandsAlone: the client is a module of its own whose module
// graph holds no module of the server's, so that depending on it brings no
// server dependency: the package imports only the standard library, and
// `go mod graph` names no module but the client and its tests' YAML
// decoder.
func TestModuleStandsAlone(t *testing.T) {
	if m := goCmd(t, "list", "-m"); m != modulePath {
		t.Fatalf("go list -m in client/: %q, want the module %s (client/go.mod)", m, modulePath)
	}
	if deps := goCmd(t, "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", "."); deps != modulePath {
		t.Errorf("the package's imports beyond the standard library:\n%s", deps)
	}
	graph := goCmd(t, "mod", "graph")
	for _, line := range strings.Split(graph, "\n") {
		for _, m := range strings.Fields(line) {
			path, _, _ := strings.Cut(m, "@")
			if path != modulePath && path != "go" && path != "toolchain" && !slices.Contains(testOnlyModules, path) {
				t.Errorf("go mod graph: %q requires a module beyond the client's tests' YAML decoder", line)
			}
		}
	}
}

// goCmd runs the go command in the package's directory and returns its
// output, trimmed.
func goCmd(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("go", args...).Output()
	if err != nil {
		msg := err.Error()
		if ee, ok := err.(*exec.ExitError); ok {
			msg += "\n" + string(ee.Stderr)
		}
		t.Fatalf("go %s: %s", strings.Join(args, " "), msg)
	}
	return strings.TrimSpace(string(out))
}
