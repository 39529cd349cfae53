// Package fixturetest hands tests fixture events, decoded.
package fixturetest

import (
	"os"
	"testing"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/fixtures"
)

// Event decodes the embedded fixture event events/name (package fixtures).
func Event(t testing.TB, name string) *v1alpha1.ClusterEvent {
	t.Helper()
	data, err := fixtures.Events.ReadFile("events/" + name)
	return decode(t, name, data, err)
}

// EventFile decodes the event in the file at path: the fixtures kept apart from the
// embedded ones.
func EventFile(t testing.TB, path string) *v1alpha1.ClusterEvent {
	t.Helper()
	data, err := os.ReadFile(path)
	return decode(t, path, data, err)
}

// decode fails t when the event could not be read (err) or does not decode.
func decode(t testing.TB, name string, data []byte, err error) *v1alpha1.ClusterEvent {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	ev, err := v1alpha1.DecodeEvent(data)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return ev
}
