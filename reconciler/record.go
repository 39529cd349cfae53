package reconciler

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path"

	"sigs.k8s.io/yaml"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/generator"
)

// recordFile is the file beside a cluster's manifests that holds the last event applied to
// it, without its Secret material: with it, the repository alone can be rendered again
// (resync after an upgrade of magnum-gitops, status after a restart). Flux ignores it: the
// directory's kustomization.yaml does not list it.
const recordFile = "magnum-cluster.yaml"

// encodeRecord returns an event as stored in recordFile: everything but the Secret material, as
// indented JSON. JSON is YAML too, so the file keeps its name and older records, written as
// YAML, still read; JSON is what a resync reads quickly for every cluster, with the
// standard library.
func encodeRecord(ev *v1alpha1.ClusterEvent) ([]byte, error) {
	c := *ev
	c.Secrets = nil
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(&c); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// recordPath is where a rendered cluster's record lives.
func recordPath(res *generator.Result) string {
	return path.Join(generator.ClusterDir(res.Root, res.Namespace, res.ReleaseName), recordFile)
}

// readRecord decodes a recordFile.
func readRecord(data []byte) (*v1alpha1.ClusterEvent, error) {
	ev, err := v1alpha1.DecodeEvent(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", recordFile, err)
	}
	return ev, nil
}

// inherit is an event as the repository takes it: what a cluster's record keeps across
// events — its adoption, which Magnum's later events do not carry — laid over an event that
// does not say it. It returns ev itself when there is nothing to inherit, else a copy.
func inherit(ev *v1alpha1.ClusterEvent, record []byte) *v1alpha1.ClusterEvent {
	// Most records hold no adoption: the key's absence from the bytes proves it cheaply.
	if ev.Adopted != nil || !bytes.Contains(record, []byte("adopted")) {
		return ev
	}
	var rec struct {
		Adopted *v1alpha1.Adoption `json:"adopted"`
	}
	if yaml.Unmarshal(record, &rec) != nil || rec.Adopted == nil {
		return ev // a corrupt record is the plan's to overwrite
	}
	c := *ev
	c.Adopted = rec.Adopted
	return &c
}

// sameEvent reports whether a record read back (in whatever encoding it was written) holds
// the event whose record is want: the one rule for "the same event" of records.
func sameEvent(rec *v1alpha1.ClusterEvent, want []byte) bool {
	again, err := encodeRecord(rec)
	return err == nil && bytes.Equal(again, want)
}

// RecordPath is where the cluster's record lives in the repository.
func (rec ClusterRecord) RecordPath() string {
	return path.Join(generator.ClusterDir(rec.Root, rec.Namespace, rec.StackID), recordFile)
}
