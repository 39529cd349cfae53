// Package yamlv2 holds how go.yaml.in/yaml/v2 (v2.4.x, the YAML library under
// sigs.k8s.io/yaml) resolves a plain scalar (ResolvesToString and its helpers), ported so
// that it agrees with the library exactly. The generator's YAML writer (generator/marshal.go)
// uses it to decide quoting; that writer, and with it this package, is kept only because a
// benchmark shows the library misses the render's target (docs/benchmarks.md).
package yamlv2
