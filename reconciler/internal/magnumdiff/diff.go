package magnumdiff

import (
	"encoding/json"
	"maps"
	"slices"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
)

// State is a cluster as an event carries it: the cluster, its template and its node
// groups (in Magnum's order). Magnum's view of a cluster is one, and so is each step's
// outcome.
type State struct {
	Cluster    v1alpha1.Cluster
	Template   v1alpha1.ClusterTemplate
	NodeGroups []v1alpha1.NodeGroup
}

// Clone copies the state deeply (through JSON: every field of these types marshals).
func (s State) Clone() State {
	var out State
	b, err := json.Marshal(s)
	if err == nil {
		err = json.Unmarshal(b, &out)
	}
	if err != nil {
		panic("magnumdiff: cloning a cluster state: " + err.Error()) // plain data: cannot happen
	}
	return out
}

// group returns the index of the named group, -1 when absent.
func (s *State) group(name string) int {
	return slices.IndexFunc(s.NodeGroups, func(g v1alpha1.NodeGroup) bool { return g.Name == name })
}

// ImplicitGroups gives a state without node groups (Magnum older than Stein lists none)
// Magnum's two implicit groups.
func (s *State) ImplicitGroups() {
	if len(s.NodeGroups) == 0 {
		s.NodeGroups, _ = (&v1alpha1.ClusterEvent{Cluster: s.Cluster}).EffectiveNodeGroups()
	}
}

// syncCounts sets the cluster's node_count and master_count to the sums over its worker
// and master groups, as Magnum's Cluster object computes them.
func (s *State) syncCounts() {
	workers, masters := 0, 0
	for _, g := range s.NodeGroups {
		if g.IsMaster() {
			masters += g.NodeCount
		} else {
			workers += g.NodeCount
		}
	}
	s.Cluster.NodeCount, s.Cluster.MasterCount = &workers, &masters
}

// Step is one difference between what Git holds and what Magnum shows: the operation the
// Magnum driver would have been called with, and the cluster's state once it is applied.
type Step struct {
	Op        v1alpha1.Operation
	NodeGroup string
	Params    *v1alpha1.Params
	State     State
}

// Deleting reports whether a status is one of Magnum's DELETE_* statuses.
func Deleting(s v1alpha1.ClusterStatus) bool { return s.Action() == v1alpha1.ActionDelete }

// TemplateID is the template a recorded event names ("" when it names none).
func TemplateID(ev *v1alpha1.ClusterEvent) string {
	if ev.Cluster.ClusterTemplateID != "" {
		return ev.Cluster.ClusterTemplateID
	}
	return ev.ClusterTemplate.UUID
}

// RecordState is the state a recorded event holds, node groups made explicit.
func RecordState(rec *v1alpha1.ClusterEvent) State {
	groups, _ := rec.EffectiveNodeGroups()
	return State{Cluster: rec.Cluster, Template: rec.ClusterTemplate, NodeGroups: groups}.Clone()
}

// Diff turns the difference between the last event Git holds for a cluster (rec,
// nil when none) and Magnum's view of it (m) into the driver calls that would have
// produced it, one per difference, in this order: resize (a group's node count), node
// group creation, node group update (min/max counts), node group deletion, upgrade (the
// template changed), update (the cluster's labels changed). A cluster Magnum is deleting
// gets only delete_cluster, one Git has never held gets only create_cluster, and one Git
// holds as deleted gets nothing.
//
// Each step carries the state after it: Magnum's view with the later differences still
// undone, so every commit shows exactly one change and the last one is Magnum's state.
// Fields no driver call changes (status, updated_at, flavors, …) are taken from Magnum
// and never make a step on their own. The result depends on rec and m alone, so the same
// difference always yields the same steps: after a restart the next reconcile derives what is
// left and nothing twice.
func Diff(rec *v1alpha1.ClusterEvent, m State) []Step {
	m.ImplicitGroups()
	switch {
	case rec == nil && Deleting(m.Cluster.Status):
		return nil
	case rec == nil:
		return []Step{{Op: v1alpha1.CreateCluster, State: m.Clone()}}
	case rec.Operation == v1alpha1.DeleteCluster:
		return nil
	case Deleting(m.Cluster.Status):
		s := RecordState(rec)
		s.Cluster.Status, s.Cluster.StatusReason, s.Cluster.UpdatedAt = m.Cluster.Status, m.Cluster.StatusReason, m.Cluster.UpdatedAt
		return []Step{{Op: v1alpha1.DeleteCluster, State: s}}
	}
	d := newClusterDiff(rec, m)
	d.resizes()
	d.createdGroups()
	d.updatedGroups()
	d.deletedGroups()
	d.upgrade()
	d.labels()
	return d.steps
}

// clusterDiff folds Magnum's differences, one at a time, into a state that starts as
// Magnum's view with every difference undone.
type clusterDiff struct {
	rec     map[string]v1alpha1.NodeGroup // recorded groups by name
	derived bool                          // the record listed no groups: Magnum's defaults
	recTmpl string
	recEv   *v1alpha1.ClusterEvent
	m       State
	s       State
	steps   []Step
}

func newClusterDiff(rec *v1alpha1.ClusterEvent, m State) *clusterDiff {
	m = m.Clone()
	recState := RecordState(rec)
	d := &clusterDiff{rec: map[string]v1alpha1.NodeGroup{}, derived: len(rec.NodeGroups) == 0,
		recTmpl: TemplateID(rec), recEv: rec, m: m}
	for _, g := range recState.NodeGroups {
		d.rec[g.Name] = g
	}
	s := State{Cluster: m.Cluster, Template: m.Template}
	if m.Cluster.StackID == "" {
		s.Cluster.StackID = rec.Cluster.StackID
	}
	s.Cluster.Labels = maps.Clone(rec.Cluster.Labels)
	if d.recTmpl != "" {
		// A record without a template id cannot tell an upgrade: Magnum's template is taken.
		s.Cluster.ClusterTemplateID, s.Template = d.recTmpl, recState.Template
	}
	for _, mg := range m.NodeGroups {
		rg, ok := d.rec[mg.Name]
		if !ok {
			continue // created later (or never, when Magnum is already deleting it)
		}
		g := mg
		g.NodeCount = rg.NodeCount
		if !d.derived {
			g.MinNodeCount, g.MaxNodeCount = rg.MinNodeCount, rg.MaxNodeCount
		}
		if Deleting(mg.Status) && !Deleting(rg.Status) {
			g.Status = rg.Status // its deletion is a step of its own
		}
		if mg.NodeLabels == nil && mg.NodeTaints == nil {
			// Magnum's API shows them from 1.14 on, the poller speaks 1.10: not shown is
			// not removed, and what the shim recorded stays.
			g.NodeLabels, g.NodeTaints = rg.NodeLabels, rg.NodeTaints
		}
		s.NodeGroups = append(s.NodeGroups, g)
	}
	for _, rg := range recState.NodeGroups {
		if slices.ContainsFunc(m.NodeGroups, func(g v1alpha1.NodeGroup) bool { return g.Name == rg.Name }) {
			continue
		}
		if Deleting(rg.Status) {
			continue // Git already renders it deleted, and Magnum has finished deleting it
		}
		s.NodeGroups = append(s.NodeGroups, rg) // deleted from Magnum: a step of its own
	}
	s.syncCounts()
	d.s = s
	return d
}

// add records a step with a copy of the state as it now is.
func (d *clusterDiff) add(op v1alpha1.Operation, nodegroup string, params *v1alpha1.Params) {
	d.s.syncCounts()
	d.steps = append(d.steps, Step{Op: op, NodeGroup: nodegroup, Params: params, State: d.s.Clone()})
}

// live are Magnum's groups that are not being deleted and that Git holds too.
func (d *clusterDiff) live(f func(mg, rg v1alpha1.NodeGroup)) {
	for _, mg := range d.m.NodeGroups {
		if rg, ok := d.rec[mg.Name]; ok && !Deleting(mg.Status) {
			f(mg, rg)
		}
	}
}

func (d *clusterDiff) resizes() {
	d.live(func(mg, rg v1alpha1.NodeGroup) {
		if mg.NodeCount == rg.NodeCount {
			return
		}
		d.s.NodeGroups[d.s.group(mg.Name)].NodeCount = mg.NodeCount
		n := mg.NodeCount
		d.add(v1alpha1.ResizeCluster, mg.Name, &v1alpha1.Params{NodeCount: &n})
	})
}

func (d *clusterDiff) createdGroups() {
	for i, mg := range d.m.NodeGroups {
		if _, ok := d.rec[mg.Name]; ok || Deleting(mg.Status) {
			continue
		}
		// Keep Magnum's order: after every group Magnum lists before it.
		at := 0
		for j, g := range d.s.NodeGroups {
			if k := slices.IndexFunc(d.m.NodeGroups, func(x v1alpha1.NodeGroup) bool { return x.Name == g.Name }); k >= 0 && k < i {
				at = j + 1
			}
		}
		d.s.NodeGroups = slices.Insert(d.s.NodeGroups, at, mg)
		d.add(v1alpha1.CreateNodeGroup, mg.Name, nil)
	}
}

func (d *clusterDiff) updatedGroups() {
	if d.derived {
		return // the record carried Magnum's default counts: nothing to compare
	}
	d.live(func(mg, rg v1alpha1.NodeGroup) {
		if intOr(mg.MinNodeCount, 0) == intOr(rg.MinNodeCount, 0) && equalPtr(mg.MaxNodeCount, rg.MaxNodeCount) {
			return
		}
		g := &d.s.NodeGroups[d.s.group(mg.Name)]
		g.MinNodeCount, g.MaxNodeCount = mg.MinNodeCount, mg.MaxNodeCount
		d.add(v1alpha1.UpdateNodeGroup, mg.Name, nil)
	})
}

func (d *clusterDiff) deletedGroups() {
	for _, g := range slices.Clone(d.s.NodeGroups) {
		mi := slices.IndexFunc(d.m.NodeGroups, func(x v1alpha1.NodeGroup) bool { return x.Name == g.Name })
		switch {
		case mi < 0:
			d.s.NodeGroups = slices.Delete(d.s.NodeGroups, d.s.group(g.Name), d.s.group(g.Name)+1)
		case Deleting(d.m.NodeGroups[mi].Status) && !Deleting(g.Status):
			d.s.NodeGroups[d.s.group(g.Name)].Status = d.m.NodeGroups[mi].Status
		default:
			continue
		}
		d.add(v1alpha1.DeleteNodeGroup, g.Name, nil)
	}
}

func (d *clusterDiff) upgrade() {
	if d.recTmpl == "" || d.recTmpl == d.m.Cluster.ClusterTemplateID {
		return
	}
	d.s.Cluster.ClusterTemplateID, d.s.Template = d.m.Cluster.ClusterTemplateID, d.m.Template
	d.add(v1alpha1.UpgradeCluster, "", &v1alpha1.Params{FromTemplateID: d.recTmpl})
}

func (d *clusterDiff) labels() {
	if maps.Equal(d.m.Cluster.Labels, d.recEv.Cluster.Labels) {
		return
	}
	d.s.Cluster.Labels = maps.Clone(d.m.Cluster.Labels)
	d.add(v1alpha1.UpdateCluster, "", nil)
}

func intOr(p *int, def int) int {
	if p == nil {
		return def
	}
	return *p
}

func equalPtr(a, b *int) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
}
