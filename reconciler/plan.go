package reconciler

import (
	"bytes"
	"fmt"
	"maps"
	"path"
	"slices"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/generator"
	"github.com/magnum-gitops/magnum-gitops/gitrepo"
)

// Plan is what one event changes in a repository.
type Plan struct {
	Event  *v1alpha1.ClusterEvent
	Result *generator.Result
	// Files is every file the event writes and every path it removes, changed or not.
	Files *generator.FileSet
	// Changes maps each path whose content differs from the tree to its new content; nil
	// content removes the path.
	Changes map[string][]byte
	// Old maps each changed path to what the tree held (nil when absent).
	Old map[string][]byte
	// Commit is the change for Git: Changes with a message a reviewer understands; zero
	// when the plan changes nothing, which no one commits.
	Commit gitrepo.Change

	// Step is set when the event asks for a Kubernetes version more than one minor ahead of
	// what the tree deploys: the plan deploys this step of the chain, and the record keeps
	// the event (upgrade.go).
	Step *generator.UpgradeStep
}

// NoOp reports whether the repository already holds what the event asks for.
func (pl *Plan) NoOp() bool { return len(pl.Changes) == 0 }

// Paths returns the changed paths, sorted.
func (pl *Plan) Paths() []string { return slices.Sorted(maps.Keys(pl.Changes)) }

// Plan runs the encode and diff steps for a rendered event against what tree holds; a nil
// tree holds nothing, so that every file is new (render plans so). An event for a cluster
// whose record says it was adopted is rendered again as adopted (inherit): the plan's
// Event and Result are then that event's.
//
// An event that moves Kubernetes while an upgrade chain is under way (the tree's
// HelmRelease deploys a step of it) is refused with errUpgradeInProgress: only the
// reconciler's upgrade step moves a chain on, once Cluster API rolled out its last step.
func (p *Pipeline) Plan(ev *v1alpha1.ClusterEvent, res *generator.Result, tree gitrepo.Tree) (*Plan, error) {
	if tree == nil {
		tree = emptyTree{}
	}
	return p.plan(ev, res, tree, false)
}

// plan is Plan; chained says the caller is the upgrade step, which found the deployed
// version rolled out.
func (p *Pipeline) plan(ev *v1alpha1.ClusterEvent, res *generator.Result, tree gitrepo.Tree, chained bool) (*Plan, error) {
	dir := generator.ClusterDir(res.Root, res.Namespace, res.ReleaseName)
	if err := p.checkMove(res, tree); err != nil {
		return nil, err
	}
	rec, ok, err := tree.ReadFile(path.Join(dir, recordFile))
	if err != nil {
		return nil, stepError("read", err)
	}
	if in := inherit(ev, rec); ok && in != ev {
		again, err := generator.Render(in, p.Config)
		if err != nil {
			return nil, stepError("render", err)
		}
		again.EventDigest = res.EventDigest
		ev, res = in, again
	}
	// A cluster an operator suspended stays suspended, whatever the event (suspend.go).
	susp := recordSuspension(rec)
	names, err := tree.ListDir(dir)
	if err != nil {
		return nil, stepError("read", err)
	}
	secrets, err := p.Secrets.layout(res)
	if err != nil {
		return nil, stepError("encode", err)
	}
	l := res.Layout(&p.Config.Config, generator.FileOptions{Secrets: secrets, Existing: names, Suspend: susp != nil})
	fs, err := p.encode(l, tree)
	if err != nil {
		return nil, stepError("encode", err)
	}
	p.Secrets.addCreationRules(&p.Config.Config, fs)
	if err := p.addRecord(ev, susp, res, fs, tree); err != nil {
		return nil, stepError("encode", err)
	}

	pl := &Plan{Event: ev, Result: res, Files: fs, Changes: map[string][]byte{}, Old: map[string][]byte{}}
	for f, want := range fs.Files {
		have, ok, err := tree.ReadFile(f)
		if err != nil {
			return nil, stepError("diff", err)
		}
		if !ok || !bytes.Equal(have, want) {
			pl.Changes[f] = want
			pl.Old[f] = have
		}
	}
	for _, f := range fs.Deletes {
		have, ok, err := tree.ReadFile(f)
		if err != nil {
			return nil, stepError("diff", err)
		}
		if ok {
			pl.Changes[f] = nil
			pl.Old[f] = have
		}
	}
	if pl.NoOp() {
		return pl, nil // most plans of a resync: nothing to describe
	}
	// The deployed HelmRelease (or Application) matters only when ours differs from it:
	// when the bytes are equal, so are the chart version and the values, and the upgrade
	// rules hold trivially. Skipping the parse halves a resync of unchanged clusters.
	old := res.Values
	if deployedChanged(pl, dir) {
		dep, err := readDeployed(tree, dir, p.Gate)
		if err != nil {
			return nil, stepError("diff", err)
		}
		if err := checkDowngrade(dep, ev, res); err != nil {
			return nil, stepError("diff", err)
		}
		if step, err := p.chain(ev, res, dep, chained); err != nil {
			return nil, err
		} else if step != nil {
			// The step's plan, from the same tree: its HelmRelease, the event's record.
			pl, err := p.plan(ev, step.res, tree, true)
			if err != nil {
				return nil, err
			}
			pl.Step = step.UpgradeStep
			pl.Commit.Body += "\n" + step.String()
			pl.Commit.Trailers = append(pl.Commit.Trailers, gitrepo.Trailer{Key: trailerUpgradeTarget, Value: step.Target})
			return pl, nil
		}
		if err := checkUpgrade(dep, ev, res); err != nil {
			return nil, stepError("diff", err)
		}
		old = nil
		if dep != nil {
			old = dep.values
		}
	}
	// commitChange gives the commit the whole desired state of the event's paths (not only
	// the differences), so that a path someone else changed to what we want is no
	// conflict. Whether anything changed is pl.Changes, decided here on the tree the
	// commit follows; a plan with none is not handed to gitrepo.
	pl.Commit = commitChange(ev, res, fs, old)
	return pl, nil
}

// addRecord keeps the event's record beside the manifests, with the cluster's suspension
// (nil: none), and removes it with them.
func (p *Pipeline) addRecord(ev *v1alpha1.ClusterEvent, susp *Suspension, res *generator.Result, fs *generator.FileSet, tree gitrepo.Tree) error {
	f := recordPath(res)
	if slices.Contains(fs.Deletes, path.Join(path.Dir(f), generator.KustomizationFile)) {
		fs.Deletes = append(fs.Deletes, f)
		return nil
	}
	b, err := encodeSuspendedRecord(ev, susp)
	if err != nil {
		return err
	}
	if b, err = p.recordFile(tree, f, b); err != nil {
		return err
	}
	fs.Files[f] = b
	return nil
}

// checkMove refuses an event whose cluster lives under another path than the one the
// configuration now routes it to: another management cluster's, or flux.path when the
// repository fed one management cluster before management_clusters was set. Rendered
// under the new path, the cluster would be created a second time by the other management
// cluster while the first kept it. Moving a cluster between management clusters is
// clusterctl move, outside the repository.
func (p *Pipeline) checkMove(res *generator.Result, tree gitrepo.Tree) error {
	cfg := p.Config
	if len(cfg.ManagementClusters) == 0 {
		return nil
	}
	for _, root := range append(cfg.Roots(), cfg.Flux.Path) {
		if root == res.Root {
			continue
		}
		_, ok, err := tree.ReadFile(path.Join(generator.ClusterDir(root, res.Namespace, res.ReleaseName), recordFile))
		if err != nil {
			return stepError("read", err)
		}
		if !ok {
			continue
		}
		where := "under flux.path " + root + ", which is no management cluster's path (give the management cluster that runs it path: " + root + ")"
		if from := cfg.ManagementClusterAt(root); from != nil {
			where = fmt.Sprintf("on management cluster %s (%s)", from.Name, root)
		}
		return stepError("render", &v1alpha1.FieldError{Field: "management_clusters",
			Message: fmt.Sprintf("cluster %s lives %s; the configuration now routes it to %s: moving a cluster between management clusters is not a render (clusterctl move), route it back", res.ClusterUUID, where, res.ManagementCluster)})
	}
	return nil
}

// deployedChanged reports whether the plan writes or removes the directory's HelmRelease
// or Application.
func deployedChanged(pl *Plan, dir string) bool {
	for _, f := range []string{generator.HelmReleaseFile, generator.ApplicationFile} {
		if _, ok := pl.Changes[path.Join(dir, f)]; ok {
			return true
		}
	}
	return false
}
