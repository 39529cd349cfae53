package v1alpha1

import (
	"bytes"
	"encoding/json"
)

// decodeMembers decodes a JSON event one top-level member at a time, straight into its
// field (strictly where eventFields says so): the duplicate-key check, a token walk of the
// whole document, hands over each member's bytes, so encoding/json decodes each member
// once where decodeDocument decodes the document three times (as a map of members, then
// as an event, then the strict sections once more). Every event the API receives and
// every record a resync reads is decoded, and this takes two thirds of decodeDocument's
// time (BenchmarkDecodeEventJSON).
//
// It decides nothing: ok is false for any document it does not take as it is (YAML, a
// key it does not know, a value encoding/json refuses, an event checkEvent finds a
// problem in), and decodeDocument then decodes that document and names what is wrong.
// FuzzDecodeMembers holds the two equal on what this one accepts.
func decodeMembers(data []byte) (ev *ClusterEvent, ok bool) {
	if !isJSONObject(data) {
		return nil, false
	}
	var members []member
	if ok, err := checkJSONMembers(data, &members); !ok || err != nil {
		return nil, false
	}
	ev = &ClusterEvent{}
	for _, m := range members {
		into, strict, known := eventField(ev, m.key)
		if !known || decodeMember(m.value, into, strict) != nil {
			return nil, false
		}
	}
	var p problems
	checkEvent(&p, ev)
	if p.err() != nil {
		return nil, false
	}
	return ev, true
}

// eventField returns the field of ev a top-level key decodes into, and whether it is
// decoded strictly; known is false for a key eventFields does not list.
func eventField(ev *ClusterEvent, key string) (into any, strict, known bool) {
	for _, f := range eventFields {
		if f.key == key {
			return f.field(ev), f.strict, true
		}
	}
	return nil, false, false
}

// decodeMember decodes one member's value into its field.
func decodeMember(value []byte, into any, strict bool) error {
	if !strict {
		return json.Unmarshal(value, into)
	}
	d := json.NewDecoder(bytes.NewReader(value))
	d.DisallowUnknownFields()
	return d.Decode(into)
}
