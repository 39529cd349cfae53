// Package fixturetest hands tests the fixture events of package fixtures, decoded.
package fixturetest

import (
	"testing"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/fixtures"
)

// Event decodes the fixture event events/name; it fails t when the event is missing or
// does not decode.
func Event(t testing.TB, name string) *v1alpha1.ClusterEvent {
	t.Helper()
	data, err := fixtures.Events.ReadFile("events/" + name)
	if err != nil {
		t.Fatal(err)
	}
	ev, err := v1alpha1.DecodeEvent(data)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return ev
}
