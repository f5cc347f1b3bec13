package check

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// scheme knows the kinds a manifest may have: the core, apps and policy
// groups of k8s.io/api. Any other kind is refused.
var scheme = newScheme()

func newScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, appsv1.AddToScheme, policyv1.AddToScheme} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return s
}

// Decode splits the multi-document YAML stream manifests (helm template's
// output) at its `---` lines and decodes each document that is not empty
// or only comments into a new object of its apiVersion and kind, strictly,
// as the API server reads JSON (sigs.k8s.io/json: field names match case
// sensitively): a kind the scheme does not know, a field its type does not
// have (a misspelling, or a name in the wrong case), a field given twice or
// a value of the wrong type is an error naming the document's position and
// what helm named its source.
func Decode(manifests []byte) ([]runtime.Object, error) {
	var objs []runtime.Object
	for i, doc := range splitDocuments(manifests) {
		if isBlank(doc) {
			continue
		}
		obj, err := decodeOne(doc)
		if err != nil {
			return nil, fmt.Errorf("document %d (%s): %w", i+1, source(doc), err)
		}
		objs = append(objs, obj)
	}
	return objs, nil
}

// decodeOne decodes one document into the type of its apiVersion and kind.
func decodeOne(doc []byte) (runtime.Object, error) {
	var tm struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := yaml.Unmarshal(doc, &tm); err != nil {
		return nil, err
	}
	if tm.APIVersion == "" || tm.Kind == "" {
		return nil, fmt.Errorf("apiVersion %q and kind %q: both are needed", tm.APIVersion, tm.Kind)
	}
	gv, err := schema.ParseGroupVersion(tm.APIVersion)
	if err != nil {
		return nil, err
	}
	obj, err := scheme.New(gv.WithKind(tm.Kind))
	if err != nil {
		return nil, fmt.Errorf("unknown kind: %w", err)
	}
	js, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", tm.APIVersion, tm.Kind, err)
	}
	strict, err := kjson.UnmarshalStrict(js, obj, kjson.DisallowDuplicateFields, kjson.DisallowUnknownFields)
	if err == nil {
		err = errors.Join(strict...)
	}
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", tm.APIVersion, tm.Kind, err)
	}
	return obj, nil
}

// splitDocuments cuts a YAML stream at its lines that are exactly "---".
func splitDocuments(stream []byte) [][]byte {
	var docs [][]byte
	var cur []byte
	for _, line := range bytes.SplitAfter(stream, []byte("\n")) {
		if strings.TrimRight(string(line), " \r\n") == "---" {
			docs = append(docs, cur)
			cur = nil
			continue
		}
		cur = append(cur, line...)
	}
	return append(docs, cur)
}

// isBlank says whether doc holds only blank lines and comments.
func isBlank(doc []byte) bool {
	for _, line := range strings.Split(string(doc), "\n") {
		l := strings.TrimSpace(line)
		if l != "" && !strings.HasPrefix(l, "#") {
			return false
		}
	}
	return true
}

// source is the template helm template names in a document's
// "# Source:" comment, or "no source comment".
func source(doc []byte) string {
	for _, line := range strings.Split(string(doc), "\n") {
		if s, ok := strings.CutPrefix(line, "# Source: "); ok {
			return s
		}
	}
	return "no source comment"
}
