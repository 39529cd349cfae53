// Package yamlv2 holds the decisions of go.yaml.in/yaml/v2 (v2.4.x, the YAML library under
// sigs.k8s.io/yaml) that magnum-gitops needs faster than the library makes them, ported so
// that they agree with it exactly:
//
//   - how a plain scalar resolves (ResolvesToString and its helpers), which the generator's
//     YAML writer uses to decide quoting;
//   - ToJSON, a reader for the block-style YAML that the library's emitter writes (and that
//     people write by hand), giving the JSON that sigs.k8s.io/yaml.YAMLToJSONStrict gives.
//     It refuses (ok false) anything outside that subset, so callers fall back to the
//     library, which then decides the result or the error.
//
// Why: parsing a record or a HelmRelease with the library took ~250 µs, most of a resync of
// an unchanged cluster and a third of planning an event; the reader takes a tenth of that.
// The tests and FuzzToJSON hold both readers to the same values.
package yamlv2
