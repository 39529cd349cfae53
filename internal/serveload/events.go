package serveload

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"sigs.k8s.io/yaml"

	"github.com/magnum-gitops/magnum-gitops/fixtures"
)

// ErrFixture is the answer when the fixture event lacks what the load edits.
var ErrFixture = errors.New("serveload: the fixture event has no cluster or no worker group")

// fixtureEvent is the fixture create_cluster event as JSON, read once.
var fixtureEvent = sync.OnceValues(func() ([]byte, error) {
	data, err := fixtures.Events.ReadFile("events/01-prod-a-create.yaml")
	if err != nil {
		return nil, err
	}
	return yaml.YAMLToJSON(data)
})

// EventBody is the JSON body of event seq of cluster i, which belongs to client c: the
// fixture's create_cluster event for a cluster of its own, in the client's own project
// (so its own namespace), with seq+1 workers, so that every event changes the cluster. It
// is edited as a document, not through this module's types, so that any commit's serve
// reads the same bytes.
func EventBody(c, i, seq int) ([]byte, error) {
	data, err := fixtureEvent()
	if err != nil {
		return nil, err
	}
	var ev map[string]any
	if err := json.Unmarshal(data, &ev); err != nil {
		return nil, err
	}
	cluster, _ := ev["cluster"].(map[string]any)
	groups, _ := ev["nodegroups"].([]any)
	if cluster == nil || len(groups) < 2 {
		return nil, ErrFixture
	}
	worker, _ := groups[1].(map[string]any)
	if worker == nil {
		return nil, ErrFixture
	}
	ev["id"] = fmt.Sprintf("load-%05d-%d", i, seq)
	cluster["uuid"] = fmt.Sprintf("5a0d7c52-1d4a-4f8e-9b6c-%012d", i)
	cluster["name"] = fmt.Sprintf("load%05d", i)
	cluster["stack_id"] = fmt.Sprintf("load%05d-stack", i)
	cluster["project_id"] = fmt.Sprintf("p%05d", c)
	worker["node_count"] = seq + 1
	return json.Marshal(ev)
}
