package reconciler_test

import (
	"errors"
	"testing"

	"github.com/magnum-gitops/magnum-gitops/reconciler"
)

// TestErrorNamesItsStepOnEveryLine: a refusal of several problems, one a line, says on each
// line which step refused it.
func TestErrorNamesItsStepOnEveryLine(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"one problem", errors.New("cluster.node_count: must not be negative, got -4"),
			"render: cluster.node_count: must not be negative, got -4"},
		{"three problems", errors.New("nodegroups[default-master].node_count: odd\nnodegroups[gpu].flavor_id: too small\nnodegroups[gpu].name: reserved"),
			"render: nodegroups[default-master].node_count: odd\nrender: nodegroups[gpu].flavor_id: too small\nrender: nodegroups[gpu].name: reserved"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := &reconciler.Error{Kind: reconciler.KindInvalid, Step: "render", Err: tc.err}
			if got := e.Error(); got != tc.want {
				t.Errorf("Error() =\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}
