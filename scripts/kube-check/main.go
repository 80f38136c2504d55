// kube-check strictly decodes Kubernetes manifests (a multi-document YAML stream on stdin,
// as `helm template` prints it) into the real API types of k8s.io/api and the Prometheus
// Operator's monitoring/v1, so an unknown or misspelt field, a wrong type or an unknown
// kind fails the check: the schema check the Helm chart's tests run without a cluster.
//
// Usage: helm template ... | kube-check
// Prints one "ok <kind> <name>" line per document; exit 1 on the first error.
package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

func main() {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		corev1.AddToScheme, appsv1.AddToScheme, monitoringv1.AddToScheme,
	} {
		if err := add(scheme); err != nil {
			fail("scheme: %v", err)
		}
	}
	decoder := serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDeserializer()
	reader := utilyaml.NewYAMLReader(bufio.NewReader(os.Stdin))
	count := 0
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			fail("reading YAML: %v", err)
		}
		if len(bytes.TrimSpace(stripComments(doc))) == 0 {
			continue
		}
		obj, gvk, err := decoder.Decode(doc, nil, nil)
		if err != nil {
			fail("document %d: %v", count+1, err)
		}
		name := ""
		if m, ok := obj.(metav1.Object); ok {
			name = m.GetName()
			if name == "" {
				fail("document %d (%s): metadata.name is empty", count+1, gvk.Kind)
			}
		}
		fmt.Printf("ok %s %s\n", gvk.Kind, name)
		count++
	}
	if count == 0 {
		fail("no manifests on stdin")
	}
}

// stripComments drops whole-line comments, so a document of only "# Source: ..." is empty.
func stripComments(doc []byte) []byte {
	var out bytes.Buffer
	for _, line := range bytes.Split(doc, []byte("\n")) {
		if t := bytes.TrimSpace(line); len(t) > 0 && t[0] == '#' {
			continue
		}
		out.Write(line)
		out.WriteByte('\n')
	}
	return out.Bytes()
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "kube-check: "+format+"\n", args...)
	os.Exit(1)
}
