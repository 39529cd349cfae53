package report

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/status"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/containerinfra/v1/clusters"
)

// MagnumMicroversion is the container-infra API version the reporter speaks: 1.10 allows
// node_count 0 and all three health fields (API ≥ 1.1).
const MagnumMicroversion = "1.10"

// MagnumReporter writes what the public Magnum API lets an outside service write:
// health_status, health_status_reason, and node_count when the autoscaler changed it
// (PATCH /v1/clusters/{uuid}, JSON Patch; policies cluster:update and
// cluster:update_health_status). status, api_address and coe_version can only be written
// from inside Magnum: they are served by Handler for a Magnum-side driver.
type MagnumReporter struct {
	// Client is a container-infra service client (openstack.NewContainerInfraV1).
	Client *gophercloud.ServiceClient
}

// ErrNotUpdatable reports a cluster Magnum's conductor would not update now (an operation
// is in progress, or failed): nothing was sent.
var ErrNotUpdatable = errors.New("magnum updates no cluster in this state")

// updatableStatuses are the states in which Magnum's conductor updates a cluster
// (magnum.conductor.handlers.cluster_conductor, cluster_update's allow_update_status).
var updatableStatuses = []string{"CREATE_COMPLETE", "UPDATE_COMPLETE", "RESUME_COMPLETE", "RESTORE_COMPLETE",
	"ROLLBACK_COMPLETE", "SNAPSHOT_COMPLETE", "CHECK_COMPLETE", "ADOPT_COMPLETE"}

// Known is what Magnum currently holds, so unchanged fields are not written.
type Known struct {
	HealthStatus v1alpha1.HealthStatus
	HealthReason map[string]string
	NodeCount    int
}

// Report sends the fields that differ from what Magnum holds; nothing when none do.
// Health UNKNOWN from an unreadable management cluster is not written: Magnum keeps its
// last known health rather than flapping.
func (m *MagnumReporter) Report(ctx context.Context, r status.Report, known Known) (bool, error) {
	var ops []clusters.UpdateOpts
	if r.HealthStatus != v1alpha1.UnknownHealth {
		if r.HealthStatus != known.HealthStatus {
			ops = append(ops, clusters.UpdateOpts{Op: clusters.ReplaceOp, Path: "/health_status", Value: r.HealthStatus})
		}
		if !sameReasons(r.HealthReason, known.HealthReason) {
			ops = append(ops, clusters.UpdateOpts{Op: clusters.ReplaceOp, Path: "/health_status_reason", Value: reasonsText(r.HealthReason)})
		}
	}
	// Magnum shows the sum of every worker group as node_count but takes a PATCH of it as the
	// default worker group's new size (and resizes it through the driver): written only when
	// that group is the only one.
	nodeCount := r.NodeCount != known.NodeCount && r.NodeCount > 0 && r.Status.Outcome() == v1alpha1.Complete && r.WorkerGroups == 1
	if nodeCount {
		ops = append(ops, clusters.UpdateOpts{Op: clusters.ReplaceOp, Path: "/node_count", Value: r.NodeCount})
	}
	if len(ops) == 0 {
		return false, nil
	}
	// Magnum's API accepts the PATCH (202) whatever the cluster's state, and its conductor
	// then refuses, out of the caller's sight, any cluster not in a state it updates: a
	// report sent then would be lost. Ask first; the next pass tries again.
	c, err := clusters.Get(ctx, m.client(), r.ClusterUUID).Extract()
	if err != nil {
		return false, fmt.Errorf("magnum: reading cluster %s: %w", r.ClusterUUID, err)
	}
	if !slices.Contains(updatableStatuses, c.Status) {
		return false, fmt.Errorf("magnum: cluster %s is %s: %w", r.ClusterUUID, c.Status, ErrNotUpdatable)
	}
	// Magnum saves a resize's or an update's new count, still *_COMPLETE, before its driver
	// sends serve the operation: a count other than the one the report judged is a request
	// on its way, which writing CAPI's count would undo. Only the autoscaler's changes, with
	// Magnum still at the judged count, are written.
	if nodeCount && (c.NodeCount != r.DesiredNodeCount || c.NodeCount == r.NodeCount) {
		ops = slices.DeleteFunc(ops, func(o clusters.UpdateOpts) bool { return o.Path == "/node_count" })
		if len(ops) == 0 {
			if c.NodeCount == r.NodeCount {
				return false, nil
			}
			return false, fmt.Errorf("magnum: cluster %s asks for %d nodes, serve has %d: %w", r.ClusterUUID, c.NodeCount, r.DesiredNodeCount, ErrNotUpdatable)
		}
	}
	if _, err := clusters.Update(ctx, m.client(), r.ClusterUUID, ops).Extract(); err != nil {
		return false, fmt.Errorf("magnum: updating cluster %s: %w", r.ClusterUUID, err)
	}
	return true, nil
}

// Known reads what Magnum currently holds for a cluster (GET /v1/clusters/{uuid}, policy
// cluster:get): its health_status, health_status_reason and node_count, as Report compares
// them. It exists because the service keeps Known in memory only: after a restart or a
// leader failover a new leader learns Magnum's values once per cluster instead of
// rewriting every cluster (node_count included) with values Magnum already holds.
//
// A cluster Magnum does not know (404) gives an error that matches ErrNotFound with
// errors.Is and wraps gophercloud's ErrUnexpectedResponseCode, so
// gophercloud.ResponseCodeIs(err, http.StatusNotFound) holds too. A health status Magnum
// has not been told yet reads as the empty HealthStatus, which differs from every value
// Report writes; a non-string reason value (the API declares strings) is kept in its JSON
// form, so it can only cause one rewrite, never hide a change.
func (m *MagnumReporter) Known(ctx context.Context, uuid string) (Known, error) {
	c, err := clusters.Get(ctx, m.client(), uuid).Extract()
	switch {
	case gophercloud.ResponseCodeIs(err, http.StatusNotFound):
		return Known{}, fmt.Errorf("magnum: reading cluster %s: %w: %w", uuid, ErrNotFound, err)
	case err != nil:
		return Known{}, fmt.Errorf("magnum: reading cluster %s: %w", uuid, err)
	case c == nil:
		return Known{}, fmt.Errorf("magnum: reading cluster %s: empty response", uuid)
	}
	k := Known{HealthStatus: v1alpha1.HealthStatus(c.HealthStatus), NodeCount: c.NodeCount}
	if len(c.HealthStatusReason) > 0 {
		k.HealthReason = make(map[string]string, len(c.HealthStatusReason))
		for key, v := range c.HealthStatusReason {
			k.HealthReason[key] = reasonText(v)
		}
	}
	return k, nil
}

// client is the configured client at the reporter's microversion; Magnum answers
// OpenStack-API-Version only under its "container-infra" service type, which gophercloud
// derives from the catalog type set here when the client has none.
func (m *MagnumReporter) client() *gophercloud.ServiceClient {
	c := *m.Client
	c.Microversion = MagnumMicroversion
	if c.Type == "" {
		c.Type = "container-infrastructure-management"
	}
	return &c
}

// reasonsText is health_status_reason as Magnum's PATCH takes it: the map as JSON text,
// which the API turns into the dict it stores (its JSON Patch values may be a string or an
// integer only; a JSON object is refused with 400 "Wrong type"). What Magnum 15's API code
// makes of each shape is recorded in testdata/magnum-15-cluster-patch.json.
func reasonsText(m map[string]string) string {
	if m == nil {
		return "{}" // "null" is no mapping to Magnum
	}
	b, _ := json.Marshal(m) // a string map always encodes
	return string(b)
}

// reasonText is a health_status_reason value as text: strings as they are, anything else
// in its JSON form.
func reasonText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func sameReasons(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
