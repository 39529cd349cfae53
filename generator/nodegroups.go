package generator

import (
	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/magnum"
)

// group is a node group with the document field it came from, for error messages.
type group struct {
	v1alpha1.NodeGroup
	// field is nodegroups[<name>] for a listed group; "cluster" for one of the two Magnum
	// derives from a cluster event without node groups (see at).
	field string
	// defaultWorker marks Magnum's default_ng_worker: the first default non-master group.
	defaultWorker bool
}

// at is the document field of one of the group's properties. The two groups derived from
// a cluster event without node groups take theirs from the cluster: counts and flavors from
// its own fields, the rest from its labels.
func (g group) at(property string) string {
	if g.field != "cluster" {
		return g.field + "." + property
	}
	switch property {
	case "node_count":
		if g.IsMaster() {
			return "cluster.master_count"
		}
		return "cluster.node_count"
	case "flavor_id":
		if g.IsMaster() {
			return "cluster.master_flavor_id"
		}
		return "cluster.flavor_id"
	case "name":
		return "cluster"
	}
	return "cluster.labels." + property
}

// nodeGroupList returns the groups a render covers, in Magnum's order. An event without
// node groups gets the two Magnum creates with a cluster (default-master, default-worker).
// The target of delete_nodegroup and groups already being deleted are left out: the driver
// re-sends a group whose deletion is still in progress on the next render, which would bring
// its MachineDeployment back.
func (r *render) nodeGroupList() []group {
	groups, fields := r.ev.EffectiveNodeGroups()
	out := make([]group, len(groups))
	for i, ng := range groups {
		out[i] = group{NodeGroup: ng, field: fields[i]}
	}
	if len(r.ev.NodeGroups) == 0 {
		// Magnum gives its default worker group the cluster's min_node_count label.
		minCount := 1
		if v, ok := r.ev.Cluster.Labels["min_node_count"]; ok {
			if n, ok := parsePythonInt(v); ok {
				minCount = n
			}
		}
		out[1].MinNodeCount = &minCount
	}
	for i := range out {
		if out[i].IsDefault && !out[i].IsMaster() {
			out[i].defaultWorker = true
			break
		}
	}
	return out
}

// checkTarget validates the event's "nodegroup" against the list.
func (r *render) checkTarget(all []group) {
	op, name := r.ev.Operation, r.ev.NodeGroup
	if name == "" {
		if op.TargetsNodeGroup() {
			r.p.add("nodegroup", "required for %s", op)
		}
		return
	}
	for _, g := range all {
		if g.Name != name {
			continue
		}
		if op == v1alpha1.DeleteNodeGroup && (g.IsDefault || g.IsMaster()) {
			r.p.add("nodegroup", "%q is a default or control-plane node group, which Magnum does not delete on its own", name)
		}
		return
	}
	r.p.add("nodegroup", "no node group named %q in nodegroups", name)
}

// rendered filters the groups that appear in the values.
func (r *render) rendered(all []group) []group {
	var out []group
	for _, g := range all {
		if r.ev.Operation == v1alpha1.DeleteNodeGroup && g.Name == r.ev.NodeGroup {
			continue
		}
		if !g.IsDefault && g.Status.Action() == v1alpha1.ActionDelete {
			r.deviate("nodeGroups", "node group %s is left out while Magnum deletes it (%s); the driver sends it again, which brings its MachineDeployment back", g.Name, g.Status)
			continue
		}
		out = append(out, g)
	}
	return out
}

// masterCount is Magnum's cluster.master_count: the sum over control-plane groups. The
// control plane runs etcd, so it must be odd (Magnum's validate_master_size).
func (r *render) masterCount(groups []group) any {
	n, field := 0, "cluster.master_count"
	for _, g := range groups {
		if g.IsMaster() {
			if g.NodeCount < 0 {
				r.p.add(g.at("node_count"), "must not be negative, got %d", g.NodeCount)
			}
			n += g.NodeCount
			field = g.at("node_count")
		}
	}
	if n < 1 || n%2 == 0 {
		r.p.add(field, "the control plane needs an odd number of nodes (1, 3, 5...), got %d", n)
	}
	return n
}

// nodeGroups renders nodeGroups[]: every non-master group, with autoscaling keys when
// autoscaling is on and min != max (the driver's _get_node_counts and
// _validate_allowed_node_counts, with its exact messages; docs/driver-rules.md, "Node groups
// and autoscaling").
func (r *render) nodeGroups(groups []group) []any {
	autoscaling := r.labels.boolean("auto_scaling_enabled", r.lc.AutoScalingEnabled)
	out := []any{}
	seen := map[string]string{}
	mdNames := map[string]string{}
	autoscaled := false
	for _, g := range groups {
		if g.IsMaster() {
			r.nodeProperties(g, nil)
			continue
		}
		name := magnum.SanitizedName(g.Name)
		switch {
		case name == "":
			r.p.add(g.at("name"), "%q has no character a Kubernetes name can use", g.Name)
		case r.chart.atLeast("0.15.0") && !isNodeGroupName(name):
			// The chart checks its node group names from 0.15.0 on; older charts take any
			// DNS label (Magnum allows names of 1 character).
			r.p.add(g.at("name"), "%q sanitizes to %q; chart %s needs at least 3 characters of [a-z0-9-], starting with a letter and ending with a letter or digit", g.Name, name, r.chartLabel())
		case name == "control-plane":
			r.p.add(g.at("name"), "\"control-plane\" is reserved: its MachineHealthCheck would collide with the control plane's")
		case seen[name] != "":
			r.p.add(g.at("name"), "%q sanitizes to %q, the same as %s", g.Name, name, seen[name])
		default:
			md := magnum.ChartComponentName(r.release, name)
			if other := mdNames[md]; other != "" {
				r.p.add(g.at("name"), "MachineDeployment name %q (cut to 63 characters by the chart) collides with %s", md, other)
			}
			mdNames[md] = g.field
			if full := r.release + "-" + name; md != full {
				r.deviate("nodeGroups", "node group %s: its MachineDeployment is %q, cut to 63 characters as the chart cuts it; the driver looks for %q and never finds it", g.Name, md, full)
			}
		}
		seen[name] = g.field
		if g.NodeCount < 0 {
			r.p.add(g.at("node_count"), "must not be negative, got %d", g.NodeCount)
		}
		entry := map[string]any{
			"name":          name,
			"machineFlavor": nullIfEmpty(g.FlavorID),
			"machineCount":  g.NodeCount,
		}
		if autoscaling {
			lo, hi := r.nodeCounts(g)
			switch {
			case lo < 1 && !r.allowScaleFromZero(lo):
				r.p.add(g.at("min_node_count"), "Min node count must be greater than or equal to 1 for all node groups. (got %d)%s", lo, r.scaleFromZeroHint(lo))
			case lo > g.NodeCount:
				r.p.add(g.at("min_node_count"), "Min node count must be less than or equal to current node count (%d > %d)", lo, g.NodeCount)
			case hi < lo:
				r.p.add(g.at("max_node_count"), "Max node count must be greater than or equal to min node count (%d < %d)", hi, lo)
			}
			if lo != hi {
				entry["autoscale"] = true
				entry["machineCountMin"] = lo
				entry["machineCountMax"] = hi
				autoscaled = true
				if lo == 0 {
					r.zeroGroups = append(r.zeroGroups, zeroGroup{group: g, name: name})
				}
			}
		}
		labels, taints := r.nodeProperties(g, entry)
		if n := len(r.zeroGroups); n > 0 && r.zeroGroups[n-1].field == g.field {
			r.zeroGroups[n-1].nodeLabels, r.zeroGroups[n-1].taints = labels, taints
		}
		out = append(out, entry)
	}
	if autoscaled {
		r.deviate("nodeGroups[].autoscale", "a boolean true; the driver sends the string \"true\". "+
			"The chart only tests truthiness, so the rendered objects are the same, and a boolean "+
			"cannot turn into the truthy string \"false\" through a values overlay")
	}
	return out
}

// nodeCounts is the driver's _get_node_counts.
func (r *render) nodeCounts(g group) (int, int) {
	lo, hi := g.NodeCount, g.NodeCount
	if g.MinNodeCount != nil {
		lo = *g.MinNodeCount
	}
	if g.MaxNodeCount != nil {
		hi = *g.MaxNodeCount
	}
	if g.defaultWorker {
		// Magnum gives the default worker min_node_count 1 when the user set none.
		if g.MinNodeCount != nil && *g.MinNodeCount == 1 {
			lo = g.NodeCount
		}
		minDef, maxDef := r.lc.MinNodeCount, r.lc.MaxNodeCount
		if minDef == nil {
			minDef = &lo
		}
		if maxDef == nil {
			maxDef = &hi
		}
		m, _ := r.labels.integer("min_node_count", minDef)
		x, _ := r.labels.integer("max_node_count", maxDef)
		lo, hi = *m, *x
	}
	return lo, hi
}

// checkFlavors is the driver's _validate_allowed_flavor, run only when the event resolved
// the flavors: on create for the master flavor and every group, on upgrade for every group,
// and on node group create/update for the target.
func (r *render) checkFlavors(groups []group) {
	flavors := r.ev.Resolved.Flavors
	if flavors == nil {
		return
	}
	check := func(field, name string) {
		f, ok := flavors[name]
		if !ok || name == "" || f.RAMMB < r.cfg.Magnum.CapiHelm.MinimumFlavorRAM {
			r.p.add(field, "Flavor %s does not have enough RAM to run Kubernetes. Minimum %d MB required.",
				name, r.cfg.Magnum.CapiHelm.MinimumFlavorRAM)
			return
		}
		if f.VCPUs < r.cfg.Magnum.CapiHelm.MinimumFlavorVCPUs {
			r.p.add(field, "Flavor %s does not have enough CPU to run Kubernetes. Minimum %d vcpus required.",
				name, r.cfg.Magnum.CapiHelm.MinimumFlavorVCPUs)
		}
	}
	switch op := r.ev.Operation; op {
	case v1alpha1.CreateCluster:
		check("cluster.master_flavor_id", r.ev.Cluster.MasterFlavorID)
		fallthrough
	case v1alpha1.UpgradeCluster:
		for _, g := range groups {
			check(g.at("flavor_id"), g.FlavorID)
		}
	case v1alpha1.CreateNodeGroup, v1alpha1.UpdateNodeGroup:
		for _, g := range groups {
			if g.Name == r.ev.NodeGroup {
				check(g.at("flavor_id"), g.FlavorID)
			}
		}
	}
}
