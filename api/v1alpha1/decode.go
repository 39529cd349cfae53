package v1alpha1

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"unicode"
)

// eventFields are the top-level keys a ClusterEvent may have, each with the field it
// decodes into. Unknown top-level keys are rejected (a typo there silently changes
// meaning). The sections magnum-gitops defines are strict: a typo under secrets would
// silently drop a Secret (and CAPI would then make a CA of its own). Unknown keys inside
// cluster, cluster_template and nodegroups are accepted because Magnum's objects carry many
// fields the driver does not read.
var eventFields = []struct {
	key    string
	strict bool
	field  func(*ClusterEvent) any
}{
	{"apiVersion", false, func(ev *ClusterEvent) any { return &ev.APIVersion }},
	{"kind", false, func(ev *ClusterEvent) any { return &ev.Kind }},
	{"id", false, func(ev *ClusterEvent) any { return &ev.ID }},
	{"operation", false, func(ev *ClusterEvent) any { return &ev.Operation }},
	{"nodegroup", false, func(ev *ClusterEvent) any { return &ev.NodeGroup }},
	{"context", true, func(ev *ClusterEvent) any { return &ev.Context }},
	{"cluster", false, func(ev *ClusterEvent) any { return &ev.Cluster }},
	{"cluster_template", false, func(ev *ClusterEvent) any { return &ev.ClusterTemplate }},
	{"nodegroups", false, func(ev *ClusterEvent) any { return &ev.NodeGroups }},
	{"resolved", true, func(ev *ClusterEvent) any { return &ev.Resolved }},
	{"secrets", true, func(ev *ClusterEvent) any { return &ev.Secrets }},
	{"params", true, func(ev *ClusterEvent) any { return &ev.Params }},
	{"magnum", true, func(ev *ClusterEvent) any { return &ev.Magnum }},
	{"adopted", true, func(ev *ClusterEvent) any { return &ev.Adopted }},
}

// eventKeys lists eventFields' keys, for the refusal of an unknown one.
var eventKeys = func() []string {
	keys := make([]string, len(eventFields))
	for i, f := range eventFields {
		keys[i] = f.key
	}
	return keys
}()

// DecodeEvent parses a ClusterEvent from YAML or JSON and checks its shape (apiVersion,
// kind, operation, keys). Semantic rules are checked when it is rendered.
func DecodeEvent(data []byte) (*ClusterEvent, error) {
	if ev, ok := decodeMembers(data); ok {
		return ev, nil
	}
	return decodeDocument(data)
}

// decodeDocument is DecodeEvent for any document: YAML, or JSON that decodeMembers does
// not accept as it is. It finds and names every problem.
func decodeDocument(data []byte) (*ClusterEvent, error) {
	j, err := ToJSON(data)
	if err != nil {
		return nil, err
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(j, &top); err != nil || top == nil {
		return nil, &FieldError{Field: "(document)", Message: "must be a ClusterEvent mapping"}
	}
	var p problems
	keys := make([]string, 0, len(top))
	for k := range top {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if !slices.Contains(eventKeys, k) {
			p.add(k, "unknown field (known: %s)", strings.Join(eventKeys, ", "))
		}
	}
	if err := p.err(); err != nil {
		return nil, err
	}
	var ev ClusterEvent
	d := json.NewDecoder(bytes.NewReader(j))
	if err := d.Decode(&ev); err != nil {
		if field := decodeField(err); field != "(document)" {
			return nil, &FieldError{Field: field, Message: decodeMessage(err)}
		}
		// encoding/json gives no path with an UnmarshalJSON's own error: find the labels.
		if field, lerr := badLabels(top); lerr != nil {
			return nil, &FieldError{Field: field, Message: lerr.Error()}
		}
		return nil, &FieldError{Field: "(document)", Message: decodeMessage(err)}
	}
	for _, sec := range eventFields {
		raw, ok := top[sec.key]
		if !sec.strict || !ok || string(raw) == "null" {
			continue
		}
		sd := json.NewDecoder(bytes.NewReader(raw))
		sd.DisallowUnknownFields()
		if err := sd.Decode(sec.field(&ClusterEvent{})); err != nil {
			if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
				p.add(sec.key, "unknown field %s", name)
			}
		}
	}
	checkEvent(&p, &ev)
	if err := p.err(); err != nil {
		return nil, err
	}
	return &ev, nil
}

// checkEvent checks what a decoded event must hold: its apiVersion, kind and operation,
// its ids, text and counts.
func checkEvent(p *problems, ev *ClusterEvent) {
	if ev.APIVersion != APIVersion {
		p.add("apiVersion", "must be %q, got %q", APIVersion, ev.APIVersion)
	}
	if ev.Kind != EventKind {
		p.add("kind", "must be %q, got %q", EventKind, ev.Kind)
	}
	if !slices.Contains(Operations, ev.Operation) {
		p.add("operation", "unknown operation %q (valid: %s)", ev.Operation, joinOps())
	}
	clusterID(p, ev)
	checkText(p, ev)
	checkCounts(p, ev)
}

func joinOps() string {
	s := make([]string, len(Operations))
	for i, o := range Operations {
		s[i] = string(o)
	}
	return strings.Join(s, ", ")
}

// decodeField names the field a json decoding error is about.
func decodeField(err error) string {
	if fe, ok := TypeError(err); ok {
		return fe.Field
	}
	return "(document)"
}

func decodeMessage(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return typeMessage(te)
	}
	// Errors from Labels.UnmarshalJSON and friends carry no value, only the rule.
	return err.Error()
}

// TypeError is encoding/json's complaint about a value of the wrong type, as a field
// error: the field's path and what it must be, never the value itself (only its JSON
// kind). ok is false for any other error, and for one that names no field.
func TypeError(err error) (*FieldError, bool) {
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) || te.Field == "" {
		return nil, false
	}
	return &FieldError{Field: te.Field, Message: typeMessage(te)}, true
}

func typeMessage(te *json.UnmarshalTypeError) string {
	return fmt.Sprintf("must be %s, got %s", typeName(te.Type), te.Value)
}

// typeName names a Go type the way the author of a document thinks of it.
func typeName(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Map:
		return "a map"
	}
	return "an object"
}

// clusterID takes Magnum's cluster_id (API 1.13 and later) as stack_id, the same column
// under its older name, so that everything past decoding reads stack_id only.
func clusterID(p *problems, ev *ClusterEvent) {
	c := &ev.Cluster
	switch {
	case c.ClusterID == "":
	case c.StackID == "":
		c.StackID = c.ClusterID
	case c.StackID != c.ClusterID:
		p.add("cluster.cluster_id", "differs from cluster.stack_id; Magnum keeps them in one column (cluster_id is stack_id's name from API 1.13 on)")
	}
}

// checkText refuses control characters in the fields that reach commit messages, branch
// names and logs: a newline or NUL there would forge trailers or corrupt Git objects.
func checkText(p *problems, ev *ClusterEvent) {
	fields := []struct{ name, v string }{
		{"id", ev.ID}, {"nodegroup", ev.NodeGroup}, {"cluster.uuid", ev.Cluster.UUID},
		{"cluster.name", ev.Cluster.Name}, {"cluster.project_id", ev.Cluster.ProjectID},
		{"cluster.user_id", ev.Cluster.UserID}, {"cluster.stack_id", ev.Cluster.StackID},
	}
	for i, ng := range ev.NodeGroups {
		// By index: the name itself is what is wrong.
		fields = append(fields, struct{ name, v string }{fmt.Sprintf("nodegroups[%d].name", i), ng.Name})
	}
	for _, f := range fields {
		if strings.ContainsFunc(f.v, unicode.IsControl) {
			p.add(f.name, "must not contain control characters (newline, NUL, …)")
		}
	}
	if len(ev.ID) > 255 {
		p.add("id", "is %d characters; at most 255", len(ev.ID))
	}
}

// checkCounts refuses a negative count of the cluster whether or not node groups are listed
// (with them, the cluster's counts are what Magnum shows, and what a status report writes
// back).
func checkCounts(p *problems, ev *ClusterEvent) {
	for _, c := range []struct {
		name string
		n    *int
	}{{"cluster.master_count", ev.Cluster.MasterCount}, {"cluster.node_count", ev.Cluster.NodeCount}} {
		if c.n != nil && *c.n < 0 {
			p.add(c.name, "must not be negative, got %d", *c.n)
		}
	}
}

// badLabels finds the labels of the event that do not decode, and why.
func badLabels(top map[string]json.RawMessage) (string, error) {
	type labelled struct {
		Labels json.RawMessage `json:"labels"`
	}
	check := func(raw json.RawMessage) error {
		var l Labels
		if len(raw) == 0 || string(raw) == "null" {
			return nil
		}
		return l.UnmarshalJSON(raw)
	}
	for _, sec := range []string{"cluster", "cluster_template"} {
		var s labelled
		if json.Unmarshal(top[sec], &s) == nil {
			if err := check(s.Labels); err != nil {
				return sec + ".labels", err
			}
		}
	}
	var groups []struct {
		Name   string          `json:"name"`
		Labels json.RawMessage `json:"labels"`
	}
	if json.Unmarshal(top["nodegroups"], &groups) == nil {
		for i, g := range groups {
			if err := check(g.Labels); err != nil {
				named := &ClusterEvent{NodeGroups: make([]NodeGroup, len(groups))}
				for j := range groups {
					named.NodeGroups[j].Name = groups[j].Name
				}
				return named.NodeGroupField(i) + ".labels", err
			}
		}
	}
	return "", nil
}
