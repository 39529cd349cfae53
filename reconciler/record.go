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
// it, without its Secret material, and the cluster's suspension when an operator suspended
// it: with it, the repository alone can be rendered again (resync after an upgrade of
// magnum-gitops, status after a restart). Flux ignores it: the directory's
// kustomization.yaml does not list it.
const recordFile = "magnum-cluster.yaml"

// suspendedKey is the one key of a record beside the event's: the cluster's suspension.
const suspendedKey = "suspended"

// Suspension is a cluster an operator suspended (magnum-gitops suspend cluster): Flux
// leaves it alone until it is resumed. No Magnum event carries it; the cluster's record
// keeps it, beside the event, and every render of the cluster is handed it
// (generator.FileOptions.Suspend), so that no event or resync undoes it.
type Suspension struct {
	// Reason is the operator's, for the record and the commit; it may be empty.
	Reason string `json:"reason,omitempty"`
}

// recordDoc is a recordFile's document: the event's keys, then the suspension's. Without
// a suspension it is the event's document byte for byte.
type recordDoc struct {
	*v1alpha1.ClusterEvent
	Suspended *Suspension `json:"suspended,omitempty"`
}

// encodeRecord returns an event as stored in recordFile: everything but the Secret material, as
// indented JSON. JSON is YAML too, so the file keeps its name and older records, written as
// YAML, still read; JSON is what a resync reads quickly for every cluster, with the
// standard library.
func encodeRecord(ev *v1alpha1.ClusterEvent) ([]byte, error) { return encodeSuspendedRecord(ev, nil) }

// encodeSuspendedRecord is encodeRecord for a cluster suspended (s set) or not (nil).
func encodeSuspendedRecord(ev *v1alpha1.ClusterEvent, s *Suspension) ([]byte, error) {
	c := *ev
	c.Secrets = nil
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(recordDoc{ClusterEvent: &c, Suspended: s}); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// recordPath is where a rendered cluster's record lives.
func recordPath(res *generator.Result) string {
	return path.Join(generator.ClusterDir(res.Root, res.Namespace, res.ReleaseName), recordFile)
}

// readRecord decodes a recordFile's event. What it returns encodes again without the
// cluster's suspension: a caller that compares records (sameEvent) compares events, and
// the plans that write a record take the suspension from the tree they write it to.
func readRecord(data []byte) (*v1alpha1.ClusterEvent, error) {
	ev, _, err := decodeRecord(data)
	return ev, err
}

// decodeRecord decodes a recordFile: its event and its suspension (nil when none).
func decodeRecord(data []byte) (*v1alpha1.ClusterEvent, *Suspension, error) {
	event, s, err := splitSuspension(data)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", recordFile, err)
	}
	ev, err := v1alpha1.DecodeEvent(event)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", recordFile, err)
	}
	return ev, s, nil
}

// recordSuspension is the suspension a record holds: nil for none, for no record, and for
// a record that does not decode (which the plan overwrites).
func recordSuspension(data []byte) *Suspension {
	_, s, err := splitSuspension(data)
	if err != nil {
		return nil
	}
	return s
}

// splitSuspension takes the suspension out of a record: the event's document, which
// DecodeEvent reads strictly (it knows no "suspended"), and the suspension. Most records
// hold none: the key's absence from the bytes proves it without parsing them.
func splitSuspension(data []byte) (event []byte, s *Suspension, err error) {
	if !bytes.Contains(data, []byte(suspendedKey)) {
		return data, nil, nil
	}
	j, err := v1alpha1.ToJSON(data)
	if err != nil {
		return data, nil, nil // DecodeEvent says what is wrong with it
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(j, &top) != nil {
		return data, nil, nil
	}
	raw, ok := top[suspendedKey]
	if !ok {
		return data, nil, nil // the word is elsewhere: a label, a reason
	}
	delete(top, suspendedKey)
	if event, err = json.Marshal(top); err != nil {
		return nil, nil, err
	}
	if string(bytes.TrimSpace(raw)) == "null" {
		return event, nil, nil
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.DisallowUnknownFields()
	s = &Suspension{}
	if err := d.Decode(s); err != nil {
		return nil, nil, &v1alpha1.FieldError{Field: suspendedKey, Message: "must be a mapping with an optional reason: " + err.Error()}
	}
	return event, s, nil
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

// sameRecord reports whether the record file have holds the event whose record is want.
func sameRecord(have, want []byte) bool {
	old, err := readRecord(have)
	return err == nil && sameEvent(old, want)
}

// RecordPath is where the cluster's record lives in the repository.
func (rec ClusterRecord) RecordPath() string {
	return path.Join(generator.ClusterDir(rec.Root, rec.Namespace, rec.StackID), recordFile)
}
