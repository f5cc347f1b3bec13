package check

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// want is what a render should hold.
type want struct {
	replicas         int32
	secret           string // the Secret the environment reads
	urlKey, adminKey string // its keys
}

// checkRelease checks what the objects mean together: replicas, selectors,
// the port, the probes, the Secret wiring and the security context.
func checkRelease(t *testing.T, r release, w want) {
	t.Helper()
	d := r.deployment
	pod := d.Spec.Template
	if d.Spec.Replicas == nil || *d.Spec.Replicas != w.replicas {
		t.Errorf("replicas %v, want %d", d.Spec.Replicas, w.replicas)
	}
	if !selects(t, d.Spec.Selector, pod.Labels) {
		t.Errorf("the Deployment's selector %v does not select its pods %v", d.Spec.Selector, pod.Labels)
	}
	if !selects(t, &metav1.LabelSelector{MatchLabels: r.service.Spec.Selector}, pod.Labels) {
		t.Errorf("the Service's selector %v does not select the pods %v", r.service.Spec.Selector, pod.Labels)
	}
	if !selects(t, r.pdb.Spec.Selector, pod.Labels) {
		t.Errorf("the PodDisruptionBudget's selector %v does not select the pods %v", r.pdb.Spec.Selector, pod.Labels)
	}
	if len(pod.Spec.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(pod.Spec.Containers))
	}
	c := pod.Spec.Containers[0]
	checkPort(t, r, c)
	checkProbes(t, c)
	checkEnv(t, c, w)
	checkSecurity(t, pod.Spec, c)
}

// checkPort: the Service's target port is the container's port "http",
// the one Herald listens on.
func checkPort(t *testing.T, r release, c corev1.Container) {
	t.Helper()
	if len(c.Ports) != 1 || c.Ports[0].Name != "http" || c.Ports[0].ContainerPort != 8080 {
		t.Fatalf("container ports %+v, want http 8080", c.Ports)
	}
	sp := r.service.Spec.Ports
	if len(sp) != 1 || sp[0].TargetPort != intstr.FromString("http") || sp[0].Port != 8080 {
		t.Errorf("Service ports %+v, want 8080 to http", sp)
	}
	if got := envOf(c)["HERALD_ADDR"].Value; got != ":8080" {
		t.Errorf("HERALD_ADDR %q, want :8080 (the container port)", got)
	}
	if len(c.Args) != 1 || c.Args[0] != "serve" || len(c.Command) != 0 {
		t.Errorf("command %q args %q, want the image's entrypoint with serve", c.Command, c.Args)
	}
}

// checkProbes: liveness and start-up on /healthz, readiness on /readyz, all
// on the port "http".
func checkProbes(t *testing.T, c corev1.Container) {
	t.Helper()
	for name, tt := range map[string]struct {
		p    *corev1.Probe
		path string
	}{
		"liveness": {c.LivenessProbe, "/healthz"}, "readiness": {c.ReadinessProbe, "/readyz"}, "startup": {c.StartupProbe, "/healthz"},
	} {
		if tt.p == nil || tt.p.HTTPGet == nil {
			t.Errorf("no %s probe over HTTP", name)
			continue
		}
		if tt.p.HTTPGet.Path != tt.path || tt.p.HTTPGet.Port != intstr.FromString("http") {
			t.Errorf("%s probe %s on %s, want %s on http", name, tt.p.HTTPGet.Path, tt.p.HTTPGet.Port.String(), tt.path)
		}
	}
}

// checkEnv: the store URL and the admin key come from the Secret's keys, the
// node id from the pod's name, the data directory is the mounted volume.
func checkEnv(t *testing.T, c corev1.Container, w want) {
	t.Helper()
	env := envOf(c)
	for name, key := range map[string]string{"HERALD_STORE": w.urlKey, "HERALD_ADMIN_KEY": w.adminKey} {
		ref := env[name].ValueFrom
		if ref == nil || ref.SecretKeyRef == nil || ref.SecretKeyRef.Name != w.secret || ref.SecretKeyRef.Key != key {
			t.Errorf("%s from %+v, want Secret %s key %s", name, ref, w.secret, key)
		}
	}
	if ref := env["HERALD_NODE_ID"].ValueFrom; ref == nil || ref.FieldRef == nil || ref.FieldRef.FieldPath != "metadata.name" {
		t.Errorf("HERALD_NODE_ID from %+v, want the pod's name", ref)
	}
	data := env["HERALD_DATA"].Value
	mounted := false
	for _, m := range c.VolumeMounts {
		mounted = mounted || m.MountPath == data
	}
	if data == "" || !mounted {
		t.Errorf("HERALD_DATA %q is not a mounted volume (%+v): the root file system is read-only", data, c.VolumeMounts)
	}
}

// checkSecurity: non-root, read-only root file system, no privilege
// escalation, every mount a volume of the pod.
func checkSecurity(t *testing.T, spec corev1.PodSpec, c corev1.Container) {
	t.Helper()
	psc, sc := spec.SecurityContext, c.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot {
		t.Errorf("pod security context %+v: runAsNonRoot is needed", psc)
	}
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
		sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Errorf("container security context %+v: read-only root and no privilege escalation are needed", sc)
	}
	volumes := map[string]bool{}
	for _, v := range spec.Volumes {
		volumes[v.Name] = true
	}
	for _, m := range c.VolumeMounts {
		if !volumes[m.Name] {
			t.Errorf("mount %s names no volume of the pod", m.Name)
		}
	}
}
