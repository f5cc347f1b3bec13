package check

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
)

// renderTimeout bounds one helm run; the first `go tool helm` of a cold build
// cache also builds helm (about a minute and a half on two cores).
const renderTimeout = 10 * time.Minute

// Helm runs helm with args and returns its standard output: the binary named
// by $HELM when set, else `go tool helm` (the version this directory's go.mod
// pins), from this directory. A failure is an error carrying helm's standard
// error.
func Helm(ctx context.Context, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, renderTimeout)
	defer cancel()
	var cmd *exec.Cmd
	if h := os.Getenv("HELM"); h != "" {
		cmd = exec.CommandContext(ctx, h, args...)
	} else {
		cmd = exec.CommandContext(ctx, "go", append([]string{"tool", "helm"}, args...)...)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("helm %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.Bytes(), nil
}
