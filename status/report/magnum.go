package report

import (
	"context"
	"fmt"

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
			ops = append(ops, clusters.UpdateOpts{Op: clusters.ReplaceOp, Path: "/health_status_reason", Value: r.HealthReason})
		}
	}
	if r.NodeCount != known.NodeCount && r.NodeCount > 0 && r.Status.Outcome() == v1alpha1.Complete {
		ops = append(ops, clusters.UpdateOpts{Op: clusters.ReplaceOp, Path: "/node_count", Value: r.NodeCount})
	}
	if len(ops) == 0 {
		return false, nil
	}
	c := *m.Client
	c.Microversion = MagnumMicroversion
	if c.Type == "" {
		c.Type = "container-infrastructure-management"
	}
	if _, err := clusters.Update(ctx, &c, r.ClusterUUID, ops).Extract(); err != nil {
		return false, fmt.Errorf("magnum: updating cluster %s: %w", r.ClusterUUID, err)
	}
	return true, nil
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
