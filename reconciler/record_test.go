package reconciler_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"path"
	"strings"
	"testing"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/generator"
	"github.com/magnum-gitops/magnum-gitops/reconciler"
)

// TestAdoptionIsInherited: once a cluster's record says it was adopted, the events Magnum
// sends later — which never carry the adoption — are rendered as adopted: a Heat-era
// availability_zone label stays out of its HelmRelease, the record keeps the adoption, and
// a retry of such an event is a retry, not an idempotency conflict. The same event for a
// cluster magnum-gitops created gets its failure domain.
func TestAdoptionIsInherited(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	withZone := func(id string) *v1alpha1.ClusterEvent {
		ev := event(t, "01-prod-a-create.yaml")
		ev.ID = id
		ev.Cluster.Labels["availability_zone"] = "az-1"
		return ev
	}
	helmRelease := func(dir, rel string) string {
		return gitOut(t, dir, "show", "main:"+rel)
	}

	p, sink, dir := committer(t)
	adopted := withZone("evt-adopt")
	adopted.Adopted = &v1alpha1.Adoption{Driver: "k8s_capi_helm_v1"}
	out, err := sink.Apply(ctx, p, adopted)
	if err != nil {
		t.Fatal(err)
	}
	hrPath := ""
	for _, f := range out.Plan.Paths() {
		if strings.HasSuffix(f, "/helmrelease.yaml") {
			hrPath = f
		}
	}
	if hrPath == "" || strings.Contains(helmRelease(dir, hrPath), "failureDomain") {
		t.Fatalf("adopted cluster: HelmRelease %q has a failureDomain or is missing", hrPath)
	}

	later := withZone("evt-resize")
	later.Operation = v1alpha1.ResizeCluster
	resize(later, 5)
	out, err = sink.Apply(ctx, p, later)
	if err != nil {
		t.Fatal(err)
	}
	if out.NoOp() || out.Plan.Event.Adopted == nil || out.Plan.Event.Adopted.Driver != "k8s_capi_helm_v1" {
		t.Fatalf("a later event: committed %v, planned as adopted %+v", !out.NoOp(), out.Plan.Event.Adopted)
	}
	hr := helmRelease(dir, hrPath)
	if strings.Contains(hr, "failureDomain") || !strings.Contains(hr, "machineCount: 5") {
		t.Errorf("a later event: HelmRelease has a failureDomain, or not the resize:\n%s", hr)
	}
	if msg := gitOut(t, dir, "log", "-1", "--format=%B", "main"); !strings.Contains(msg, "warning: cluster.labels.availability_zone: ignored") {
		t.Errorf("the commit does not say the label was held back:\n%s", msg)
	}
	record := gitOut(t, dir, "show", "main:"+strings.TrimSuffix(hrPath, "helmrelease.yaml")+reconciler.RecordFile)
	if !strings.Contains(record, `"adopted"`) || !strings.Contains(record, "evt-resize") {
		t.Errorf("the record lost the adoption or the event:\n%s", record)
	}
	head := gitOut(t, dir, "rev-parse", "main")
	if again, err := sink.Apply(ctx, p, withResize(later)); err != nil || !again.NoOp() {
		t.Errorf("a retry of the later event: %v (no-op %v), want the unchanged answer", err, again != nil && again.NoOp())
	}
	changed := withResize(later)
	resize(changed, 6)
	if _, err := sink.Apply(ctx, p, changed); !errors.Is(err, reconciler.ErrIdempotencyConflict) {
		t.Errorf("the same id with another body: %v, want an idempotency conflict", err)
	}
	if gitOut(t, dir, "rev-parse", "main") != head {
		t.Error("a retry or a refused event moved the branch")
	}

	// The same event for a cluster magnum-gitops created.
	p2, sink2, dir2 := committer(t)
	if _, err := sink2.Apply(ctx, p2, withZone("evt-create")); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(helmRelease(dir2, hrPath), "failureDomain: az-1") {
		t.Error("a created cluster: availability_zone did not become its failure domain")
	}
	if msg := gitOut(t, dir2, "log", "-1", "--format=%B", "main"); !strings.Contains(msg, "differs from magnum-capi-helm on cluster.labels.availability_zone") {
		t.Errorf("the commit does not list the feature as a deviation:\n%s", msg)
	}
}

// resize sets the default worker group's size, as Magnum saves it before a resize.
func resize(ev *v1alpha1.ClusterEvent, n int) {
	ev.Cluster.NodeCount = &n
	for i := range ev.NodeGroups {
		if ev.NodeGroups[i].Name == "default-worker" {
			ev.NodeGroups[i].NodeCount = n
		}
	}
}

// withResize is a copy of the later event as its sender retries it: without the adoption,
// sharing nothing the test changes afterwards.
func withResize(ev *v1alpha1.ClusterEvent) *v1alpha1.ClusterEvent {
	c := *ev
	c.Adopted = nil
	n := *ev.Cluster.NodeCount
	c.Cluster.NodeCount = &n
	c.NodeGroups = append([]v1alpha1.NodeGroup(nil), ev.NodeGroups...)
	return &c
}

// suspendTree is a repository holding prod-a's create, planned in format: the tree, the
// cluster's record and deploy file, and the pipeline.
func suspendTree(t *testing.T, format string) (p *reconciler.Pipeline, tree mapTree, record, deploy string) {
	t.Helper()
	cfg := generator.DefaultConfig()
	cfg.Format = format
	p = &reconciler.Pipeline{Config: generator.MustSite(cfg), Secrets: encrypting(t)}
	res, _, tree := written(t, p, event(t, "01-prod-a-create.yaml"))
	dir := generator.ClusterDir(res.Root, res.Namespace, res.ReleaseName)
	return p, tree, path.Join(dir, reconciler.RecordFile), path.Join(dir, cfg.DeployFile())
}

// TestSuspensionRecord: a suspension changes the deploy file and the record, nothing
// else, and a resume gives both back byte for byte; a cluster already as asked plans
// nothing; a record with the word elsewhere is not suspended; a cluster with no record,
// no deploy file, a deploy file of the other format, a bad suspension or a reason of
// several lines is refused as invalid, naming what is wrong.
func TestSuspensionRecord(t *testing.T) {
	t.Parallel()
	suspend := reconciler.SuspendRequest{Suspend: true, Reason: "INC-1234: the control plane, by hand"}
	resume := reconciler.SuspendRequest{Reason: "repaired"}
	for _, tc := range []struct {
		name   string
		format string
		// edit prepares the tree; nil leaves prod-a as created.
		edit func(t *testing.T, p *reconciler.Pipeline, tree mapTree, record, deploy string)
		req  reconciler.SuspendRequest
		// changes is how many files the plan changes; err, when set, what its refusal says.
		changes int
		err     string
		// says is in the new deploy file, not is not.
		says, not string
	}{
		{name: "suspend", format: generator.FormatFlux, req: suspend, changes: 2, says: "\n  suspend: true\n"},
		{name: "suspend in format argo", format: generator.FormatArgo, req: suspend, changes: 2, not: "automated"},
		{name: "resume a cluster not suspended", format: generator.FormatFlux, req: resume},
		{name: "suspend a suspended cluster", format: generator.FormatFlux, req: suspend, edit: suspended},
		{name: "resume", format: generator.FormatFlux, req: resume, edit: suspended, changes: 2, not: "suspend"},
		{name: "resume in format argo", format: generator.FormatArgo, req: resume, edit: suspended, changes: 2, says: "automated"},
		{name: "the word in a label", format: generator.FormatFlux, req: resume, edit: func(t *testing.T, p *reconciler.Pipeline, tree mapTree, record, _ string) {
			ev := event(t, "01-prod-a-create.yaml")
			ev.Cluster.Labels["suspended"] = "no"
			b, err := reconciler.Record(ev)
			if err != nil {
				t.Fatal(err)
			}
			tree[record] = b
		}},
		{name: "no record", format: generator.FormatFlux, req: suspend, err: "no such record",
			edit: func(_ *testing.T, _ *reconciler.Pipeline, tree mapTree, record, _ string) { delete(tree, record) }},
		{name: "being deleted", format: generator.FormatFlux, req: suspend, err: "being deleted",
			edit: func(_ *testing.T, _ *reconciler.Pipeline, tree mapTree, _, deploy string) { delete(tree, deploy) }},
		{name: "written in the other format", format: generator.FormatFlux, req: suspend, err: "format: argo",
			edit: func(_ *testing.T, p *reconciler.Pipeline, _ mapTree, _, _ string) {
				p.Config.Format = generator.FormatArgo
			}},
		{name: "a suspension of another shape", format: generator.FormatFlux, req: resume, err: "suspended: must be a mapping",
			edit: func(_ *testing.T, _ *reconciler.Pipeline, tree mapTree, record, _ string) {
				tree[record] = []byte(strings.TrimSuffix(strings.TrimSpace(string(tree[record])), "}") + `,"suspended":"yes"}`)
			}},
		{name: "a reason of two lines", format: generator.FormatFlux, err: "reason: one line",
			req: reconciler.SuspendRequest{Suspend: true, Reason: "x\nMagnum-Operation: delete_cluster"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p, tree, record, deploy := suspendTree(t, tc.format)
			if tc.edit != nil {
				tc.edit(t, p, tree, record, deploy)
			}
			before := maps.Clone(tree)
			pl, err := p.PlanSuspend(record, tc.req, tree)
			if tc.err != "" {
				if !errors.Is(err, reconciler.ErrInvalid) || !strings.Contains(fmt.Sprint(err), tc.err) {
					t.Fatalf("err = %v, want an invalid input saying %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(pl.Changes) != tc.changes {
				t.Fatalf("changes %v, want %d", pl.Paths(), tc.changes)
			}
			if tc.changes == 0 {
				return
			}
			if _, ok := pl.Changes[deploy]; !ok {
				t.Errorf("changes %v, not %s", pl.Paths(), deploy)
			}
			file := string(pl.Changes[deploy])
			if tc.says != "" && !strings.Contains(file, tc.says) || tc.not != "" && strings.Contains(file, tc.not) {
				t.Errorf("%s (want %q in it, %q not):\n%s", deploy, tc.says, tc.not, file)
			}
			rec := &reconciler.ResyncRecord{Data: pl.Changes[record]}
			switch s := rec.Suspended(); {
			case tc.req.Suspend && (s == nil || s.Reason != tc.req.Reason):
				t.Errorf("the record's suspension: %+v, want the reason %q", s, tc.req.Reason)
			case !tc.req.Suspend && s != nil:
				t.Errorf("the record is still suspended: %+v", s)
			}
			c := pl.Commit
			if want := "magnum-gitops: " + tc.req.Verb() + " cluster prod-a (" + path.Base(path.Dir(record)) + ") in project 9f3c1b2a4d5e4f6a8b7c6d5e4f3a2b1c"; c.Subject != want {
				t.Errorf("subject %q, want %q", c.Subject, want)
			}
			if !strings.Contains(c.Body, "Reason: "+tc.req.Reason) {
				t.Errorf("the body does not give the reason:\n%s", c.Body)
			}
			trailers := fmt.Sprint(c.Trailers)
			if !strings.Contains(trailers, fmt.Sprintf("Magnum-Suspend %v", tc.req.Suspend)) || strings.Contains(trailers, reconciler.TrailerOperation) {
				t.Errorf("trailers %s: want Magnum-Suspend %v and no operation", trailers, tc.req.Suspend)
			}
			// The other way round gives the tree back as it was (suspended gave "before").
			maps.Copy(tree, pl.Changes)
			back, err := p.PlanSuspend(record, reconciler.SuspendRequest{Suspend: !tc.req.Suspend, Reason: "before"}, tree)
			if err != nil {
				t.Fatal(err)
			}
			for f, b := range back.Changes {
				if !bytes.Equal(b, before[f]) {
					t.Errorf("%s is not back as it was:\n%s\nwas\n%s", f, b, before[f])
				}
			}
		})
	}
}

// suspended suspends prod-a in the tree, as the suspend command would.
func suspended(t *testing.T, p *reconciler.Pipeline, tree mapTree, record, _ string) {
	t.Helper()
	pl, err := p.PlanSuspend(record, reconciler.SuspendRequest{Suspend: true, Reason: "before"}, tree)
	if err != nil || len(pl.Changes) != 2 {
		t.Fatalf("suspending: %v, %d changes", err, len(pl.Changes))
	}
	maps.Copy(tree, pl.Changes)
}

// TestSuspensionOutlivesEvents: once suspend committed it, every later plan of the
// cluster keeps the suspension: a resize event and a resync under new settings change
// the HelmRelease and keep spec.suspend: true, and the record keeps the suspension with
// the new event; a retry of the resize is a retry. resume commits its removal; suspend
// twice commits once.
func TestSuspensionOutlivesEvents(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p, sink, dir := committer(t)
	create := event(t, "01-prod-a-create.yaml")
	out, err := sink.Apply(ctx, p, create)
	if err != nil {
		t.Fatal(err)
	}
	res := out.Plan.Result
	cdir := generator.ClusterDir(res.Root, res.Namespace, res.ReleaseName)
	record, hr := path.Join(cdir, reconciler.RecordFile), path.Join(cdir, generator.HelmReleaseFile)
	show := func(f string) string { return gitOut(t, dir, "show", "main:"+f) }
	head := func() string { return strings.TrimSpace(gitOut(t, dir, "rev-parse", "main")) }
	suspendReq := reconciler.SuspendRequest{Suspend: true, Reason: "INC-1234"}
	for i, want := range []bool{true, false} { // committed, then already suspended
		before := head()
		out, err := sink.Suspend(ctx, p, &reconciler.ResyncRecord{Path: record, Data: []byte(show(record)), Event: create}, suspendReq)
		if err != nil {
			t.Fatal(err)
		}
		if committed := head() != before; committed != want || out.NoOp() == want {
			t.Fatalf("suspend #%d: committed %v (no-op %v), want %v", i+1, committed, out.NoOp(), want)
		}
	}
	if !strings.Contains(show(hr), "\n  suspend: true\n") || !strings.Contains(show(record), `"reason": "INC-1234"`) {
		t.Fatalf("suspend did not commit the suspension:\n%s\n%s", show(hr), show(record))
	}

	later := event(t, "02-prod-a-resize-workers.yaml")
	if out, err = sink.Apply(ctx, p, later); err != nil || out.NoOp() {
		t.Fatalf("resize: %v (no-op %v)", err, out != nil && out.NoOp())
	}
	if h, r := show(hr), show(record); !strings.Contains(h, "\n  suspend: true\n") || !strings.Contains(r, `"reason": "INC-1234"`) || !strings.Contains(r, later.ID) {
		t.Errorf("the resize lost the suspension:\n%s\n%s", h, r)
	}
	before := head()
	if again, err := sink.Apply(ctx, p, event(t, "02-prod-a-resize-workers.yaml")); err != nil || !again.NoOp() || head() != before {
		t.Errorf("a retry of the resize: %v, want no commit", err)
	}

	// A resync under new settings renders the record again, suspended.
	cfg := *p.Config
	cfg.Flux.Timeout.Duration *= 3
	p2 := *p
	p2.Config = &cfg
	snap, err := sink.Repo.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	data, _, _ := snap.ReadFile(record)
	rec := &reconciler.ResyncRecord{Path: record, Data: data, Event: later}
	pl, err := p2.PlanResync(ctx, rec, snap)
	if err != nil || pl == nil {
		t.Fatalf("resync: %v, %v", pl, err)
	}
	if h := string(pl.Changes[hr]); !strings.Contains(h, "\n  suspend: true\n") || !strings.Contains(h, "timeout: 15m0s") {
		t.Errorf("the resync lost the suspension or the new timeout:\n%s", h)
	}
	if _, ok := pl.Changes[record]; ok {
		t.Errorf("the resync rewrote the record:\n%s", pl.Changes[record])
	}

	for i, want := range []bool{true, false} { // committed, then not suspended
		before := head()
		if _, err := sink.Suspend(ctx, p, rec, reconciler.SuspendRequest{}); err != nil {
			t.Fatal(err)
		}
		if committed := head() != before; committed != want {
			t.Fatalf("resume #%d: committed %v, want %v", i+1, committed, want)
		}
	}
	if h, r := show(hr), show(record); strings.Contains(h, "suspend") || strings.Contains(r, "suspended") || !strings.Contains(h, "machineCount: 5") {
		t.Errorf("resume:\n%s\n%s", h, r)
	}
	log := gitOut(t, dir, "log", "--format=%s%n%b", "main")
	for _, want := range []string{"magnum-gitops: suspend cluster prod-a", "Reason: INC-1234", "Magnum-Suspend: true", "magnum-gitops: resume cluster prod-a", "Magnum-Suspend: false"} {
		if !strings.Contains(log, want) {
			t.Errorf("the log does not say %q:\n%s", want, log)
		}
	}
}
