package check

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
)

const chart = "../herald"

// release is a rendered chart's objects by kind.
type release struct {
	deployment *appsv1.Deployment
	service    *corev1.Service
	secret     *corev1.Secret // nil with existingSecret
	pdb        *policyv1.PodDisruptionBudget
}

// render runs helm template on the chart with args and decodes every
// manifest strictly; it fails the test on any error.
func render(t *testing.T, args ...string) (release, []byte) {
	t.Helper()
	out, err := Helm(context.Background(), append([]string{"template", "r", chart, "--namespace", "herald"}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := Decode(out)
	if err != nil {
		t.Fatalf("decoding helm template's output: %v", err)
	}
	return sortKinds(t, objs), out
}

// sortKinds files objs by kind, failing on a kind the chart should not make
// or one made twice.
func sortKinds(t *testing.T, objs []runtime.Object) release {
	t.Helper()
	var r release
	seen := map[string]bool{}
	for _, o := range objs {
		kind := o.GetObjectKind().GroupVersionKind().Kind
		if seen[kind] {
			t.Errorf("two %s objects", kind)
		}
		seen[kind] = true
		switch v := o.(type) {
		case *appsv1.Deployment:
			r.deployment = v
		case *corev1.Service:
			r.service = v
		case *corev1.Secret:
			r.secret = v
		case *policyv1.PodDisruptionBudget:
			r.pdb = v
		default:
			t.Errorf("unexpected %T in the chart", o)
		}
	}
	if r.deployment == nil || r.service == nil || r.pdb == nil {
		t.Fatalf("rendered kinds %v: Deployment, Service and PodDisruptionBudget are needed", seen)
	}
	return r
}

func TestDefaultValues(t *testing.T) {
	r, _ := render(t, "-f", "testdata/values-ci.yaml")
	if r.secret == nil {
		t.Fatal("no Secret rendered without existingSecret")
	}
	if got := string(r.secret.Data["postgres-url"]); got != "postgres://herald:change-me@postgres.db.svc:5432/herald?sslmode=disable" {
		t.Errorf("Secret postgres-url %q", got)
	}
	if got := string(r.secret.Data["admin-key"]); got != "ci-admin-key-0123456789abcdef" {
		t.Errorf("Secret admin-key %q", got)
	}
	checkRelease(t, r, want{replicas: 2, secret: r.secret.Name, urlKey: "postgres-url", adminKey: "admin-key"})
	if _, ok := r.deployment.Spec.Template.Annotations["checksum/secret"]; !ok {
		t.Error("no checksum/secret annotation: pods would not restart when the Secret changes")
	}
}

func TestThreeReplicasOnAnExistingSecret(t *testing.T) {
	r, _ := render(t, "--set", "replicaCount=3", "--set", "existingSecret.name=herald-prod",
		"--set", "existingSecret.postgresURLKey=url", "--set", "existingSecret.adminKeyKey=key",
		"--set", "publicURL=https://herald.example.com", "--set", "allowDestinations={10.1.0.0/16,fd00::/8}",
		"--set", "config.log-level=debug")
	if r.secret != nil {
		t.Errorf("Secret %s rendered although existingSecret is set", r.secret.Name)
	}
	checkRelease(t, r, want{replicas: 3, secret: "herald-prod", urlKey: "url", adminKey: "key"})
	env := envOf(r.deployment.Spec.Template.Spec.Containers[0])
	for name, value := range map[string]string{
		"HERALD_PUBLIC_URL":         "https://herald.example.com",
		"HERALD_ALLOW_DESTINATIONS": "10.1.0.0/16,fd00::/8",
		"HERALD_LOG_LEVEL":          "debug",
		"HERALD_LOG_FORMAT":         "json",
	} {
		if env[name].Value != value {
			t.Errorf("%s = %q, want %q", name, env[name].Value, value)
		}
	}
	if _, ok := env["HERALD_ALLOW_PRIVATE_DESTINATIONS"]; ok {
		t.Error("HERALD_ALLOW_PRIVATE_DESTINATIONS set although allowPrivateDestinations is false")
	}
}

func TestNoPodDisruptionBudgetWhenDisabled(t *testing.T) {
	out, err := Helm(context.Background(), "template", "r", chart, "-f", "testdata/values-ci.yaml", "--set", "podDisruptionBudget.enabled=false")
	if err != nil {
		t.Fatal(err)
	}
	objs, err := Decode(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if _, ok := o.(*policyv1.PodDisruptionBudget); ok {
			t.Error("PodDisruptionBudget rendered although podDisruptionBudget.enabled=false")
		}
	}
}

// TestRefusals: values that would make a wrong deployment stop the render
// with an error naming the value.
func TestRefusals(t *testing.T) {
	key := "--set=adminKey=ci-admin-key-0123456789abcdef"
	url := "--set=postgresURL=postgres://herald@db/herald"
	for _, tt := range []struct {
		args []string
		want string
	}{
		{nil, "postgresURL is required"},
		{[]string{key}, "postgresURL is required"},
		{[]string{key, "--set=postgresURL=sqlite"}, `postgresURL must be a postgres:// or postgresql:// URL, not "sqlite"`},
		{[]string{url}, "adminKey is required"},
		{[]string{url, "--set=adminKey=too-short"}, "adminKey must have 24 to 512 characters, not 9"},
		{[]string{"--set=existingSecret.name=s", "--set=config.store=sqlite"}, "config.store: set by the chart"},
		{[]string{"--set=existingSecret.name=s", "--set=config.--addr=:1"}, "config.--addr: a herald serve flag name without its dashes"},
	} {
		_, err := Helm(context.Background(), append([]string{"template", "r", chart}, tt.args...)...)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: %v, want an error with %q", tt.args, err, tt.want)
		}
	}
}

// TestStrictDecode: a misspelt field, a field in the wrong case, a field given
// twice and an unknown kind in helm's real output each fail the decode.
func TestStrictDecode(t *testing.T) {
	_, out := render(t, "-f", "testdata/values-ci.yaml")
	for _, tt := range []struct{ from, to, want string }{
		{"readinessProbe:", "readinesProbe:", `unknown field "spec.template.spec.containers[0].readinesProbe"`},
		{"containerPort:", "containerport:", `unknown field "spec.template.spec.containers[0].ports[0].containerport"`},
		{"  maxUnavailable: 1\n", "  maxUnavailable: 1\n  maxUnavailable: 2\n", `key "maxUnavailable" already set in map`},
		{"kind: PodDisruptionBudget", "kind: PodDisruptionBudgets", `unknown kind`},
		{"replicas: 2", "replicas: two", `cannot unmarshal`},
	} {
		bad := strings.Replace(string(out), tt.from, tt.to, 1)
		if bad == string(out) {
			t.Fatalf("%q is not in the rendered chart", tt.from)
		}
		_, err := Decode([]byte(bad))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q → %q: %v, want an error with %q", tt.from, tt.to, err, tt.want)
		}
	}
}

// envOf is a container's environment by name.
func envOf(c corev1.Container) map[string]corev1.EnvVar {
	m := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		m[e.Name] = e
	}
	return m
}

// selects says whether sel selects a pod with labels podLabels.
func selects(t *testing.T, sel *metav1.LabelSelector, podLabels map[string]string) bool {
	t.Helper()
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		t.Fatal(err)
	}
	return !s.Empty() && s.Matches(labels.Set(podLabels))
}
