package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/generator"
	"github.com/magnum-gitops/magnum-gitops/internal/config"
	"github.com/magnum-gitops/magnum-gitops/reconciler"
	"github.com/magnum-gitops/magnum-gitops/reconciler/migrate"
	"github.com/magnum-gitops/magnum-gitops/reconciler/openstack"
	"github.com/magnum-gitops/magnum-gitops/status/kube"
)

// capiHelmDriver is the name Magnum knows magnum-capi-helm by.
const capiHelmDriver = "k8s_capi_helm_v1"

type migrateOptions struct {
	configFile, filename, kubeconfig, output string
	source, templateLabel, templateDriver    string
	dryRun, export                           bool
	limit, batchSize                         int
	allowRollout                             []string
}

func newMigrateCommand() *cobra.Command {
	o := &migrateOptions{}
	cmd := &cobra.Command{
		Use:   "migrate (-f CLUSTERS | --source magnum) --config FILE",
		Short: "Adopt clusters magnum-capi-helm created, after comparing each with its live Helm release",
		Long: `Render each cluster as adopted from magnum-capi-helm, read the Helm release the driver
installed for it from the management cluster (Helm's release storage, read-only) and
report per cluster:

  identical  the values are the release's: adopting changes nothing
  differs    the values paths that change, and whether Cluster API would replace machines
             (the chart rendered with both sets of values: a MachineDeployment's machine
             template, the control plane's version, kubeadm configuration or machines)
  refused    why the cluster cannot be compared or rendered

The clusters come from CLUSTERS (-f, a YAML stream of ClusterEvents, one per cluster), or
with --source magnum from Magnum's API (the config's openstack section, or the OS_*
variables): every cluster of the templates --template-label or --template-driver selects
(default: openstack.poller.select), as Magnum holds it now; one Magnum is still operating
on is refused. --export prints those clusters as ClusterEvents, the input of -f, and does
nothing else.

Features beyond the driver stay off on an adopted cluster (docs/features.md). With
--dry-run nothing is written. Otherwise each cluster that replaces no machine, or that
--allow-rollout names, is committed (one commit per cluster, --batch-size per push, at
most --limit); a cluster already adopted makes no commit, so a run can be repeated until
every cluster is done. See docs/migrating.md.`,
		Example: `  magnum-gitops migrate --source magnum --template-label capi=true --config /etc/magnum-gitops/config.yaml --dry-run
  magnum-gitops migrate --source magnum --template-label capi=true --config config.yaml --export > clusters.yaml
  magnum-gitops migrate -f clusters.yaml --config config.yaml --limit 20 --allow-rollout prod-a`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.run(cmd.Context(), cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.filename, "filename", "f", "", "ClusterEvents, one per cluster (a YAML stream), or - for standard input (--source file)")
	f.StringVar(&o.source, "source", "file", "where the clusters come from: file (-f) or magnum (Magnum's API)")
	f.StringVar(&o.templateLabel, "template-label", "", "--source magnum: the clusters of templates with this label (key=value, or key)")
	f.StringVar(&o.templateDriver, "template-driver", "", "--source magnum: the clusters of templates of this Magnum driver (Magnum 2024.1+)")
	f.BoolVar(&o.export, "export", false, "--source magnum: print the clusters as ClusterEvents (the -f input) and stop")
	f.StringVar(&o.configFile, "config", "", "configuration file with a git section (required)")
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "management cluster kubeconfig (default: $KUBECONFIG, ~/.kube/config, in-cluster); a management_clusters entry's kubeconfig_file wins for its clusters")
	f.BoolVar(&o.dryRun, "dry-run", false, "report only; commit nothing")
	f.IntVar(&o.limit, "limit", 0, "commit at most this many clusters (0: all)")
	f.IntVar(&o.batchSize, "batch-size", 10, "clusters per push")
	f.StringSliceVar(&o.allowRollout, "allow-rollout", nil, "clusters (name or UUID) to commit even though their machines would be replaced")
	f.StringVarP(&o.output, "output", "o", "table", "report format: table or json")
	_ = cmd.MarkFlagRequired("config")
	return cmd
}

func (o *migrateOptions) run(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer) error {
	switch {
	case o.output != "table" && o.output != "json":
		return config.Invalid(fmt.Errorf("--output: unknown format %q (table, json)", o.output))
	case o.limit < 0:
		return config.Invalid(errors.New("--limit: must not be negative"))
	case o.batchSize < 1:
		return config.Invalid(errors.New("--batch-size: must be at least 1"))
	case o.source != "file" && o.source != "magnum":
		return config.Invalid(fmt.Errorf("--source: unknown source %q (file, magnum)", o.source))
	case o.source == "file" && o.filename == "":
		return config.Invalid(errors.New(`required flag(s) "filename" not set (or --source magnum)`))
	case o.source == "magnum" && o.filename != "":
		return config.Invalid(errors.New("--filename: not with --source magnum (the clusters come from Magnum)"))
	case o.source == "file" && (o.export || o.templateLabel != "" || o.templateDriver != ""):
		return config.Invalid(errors.New("--export, --template-label, --template-driver: only with --source magnum"))
	}
	file, err := loadConfig(ctx, o.configFile)
	if err != nil {
		return err
	}
	p, err := pipeline(file, false)
	if err != nil {
		return err
	}
	var events []*v1alpha1.ClusterEvent
	var refused []migrate.Report // clusters Magnum lists that cannot be adopted now
	var sel func(openstack.ClusterTemplate) bool
	if o.source == "magnum" {
		if sel, err = o.templates(&file.OpenStack); err != nil {
			return err
		}
	}
	var cloud *openstack.Cloud
	if openstackConfigured(&file.OpenStack) {
		// Events that leave "resolved" out (those --source magnum reads, or exported) are
		// resolved through OpenStack, as serve resolves them.
		if cloud, err = connectOpenStack(ctx, &file.OpenStack); err != nil {
			return err
		}
		p.Resolvers = append([]reconciler.Resolver{openstackResolver(&file.OpenStack, cloud)}, p.Resolvers...)
	}
	if o.source == "file" {
		if events, err = readEvents(stdin, o.filename); err != nil {
			return err
		}
	} else if events, refused, err = fromMagnum(ctx, &file.OpenStack, cloud, sel); err != nil {
		return err
	}
	for _, ev := range events {
		// The cluster exists and Magnum is done with it: adopting it is an update, and no
		// Magnum request's id (whose retries the ledger answers) belongs to it.
		ev.Operation, ev.NodeGroup, ev.ID = v1alpha1.UpdateCluster, "", ""
		if ev.Adopted == nil {
			ev.Adopted = &v1alpha1.Adoption{Driver: capiHelmDriver}
		}
	}
	if o.export {
		for _, r := range refused {
			fmt.Fprintf(stderr, "migrate: %s (%s) left out: %s\n", r.ClusterName, r.ClusterUUID, r.Reason)
		}
		return writeEvents(stdout, events)
	}
	clients := map[string]kubernetes.Interface{} // by kubeconfig
	reports := make([]migrate.Report, len(events))
	for i, ev := range events {
		res, err := p.Render(ctx, ev)
		if err != nil {
			reports[i] = migrate.Refuse(ev.Cluster.UUID, ev.Cluster.Name, err)
			continue
		}
		cs, err := o.clientOf(clients, &file.Config, res)
		if err != nil {
			return err
		}
		live, err := migrate.ReadRelease(cs.CoreV1(), res.Namespace, res.ReleaseName)
		if err != nil {
			reports[i] = migrate.Refuse(ev.Cluster.UUID, ev.Cluster.Name, err)
			continue
		}
		reports[i] = migrate.Compare(live, res)
	}
	// After the compared ones: commit pairs reports[i] with events[i] for those.
	reports = append(reports, refused...)
	if o.output == "json" {
		if err := writeJSON(stdout, reports); err != nil {
			return err
		}
	} else if err := writeMigrateTable(stdout, reports); err != nil {
		return err
	}
	if o.dryRun {
		return nil
	}
	return o.commit(ctx, file, p, events, reports, stderr)
}

// clientOf reaches the management cluster a rendered cluster goes to, where the driver
// installed its release: its management_clusters entry's kubeconfig_file, else
// --kubeconfig.
func (o *migrateOptions) clientOf(clients map[string]kubernetes.Interface, cfg *generator.Config, res *generator.Result) (kubernetes.Interface, error) {
	kubeconfig := o.kubeconfig
	if mc := cfg.ManagementClusterAt(res.Root); mc != nil && mc.KubeconfigFile != "" {
		kubeconfig = mc.KubeconfigFile
	}
	if cs, ok := clients[kubeconfig]; ok {
		return cs, nil
	}
	restCfg, err := kube.RESTConfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return nil, err
	}
	clients[kubeconfig] = cs
	return cs, nil
}

// commit adopts, in order, every cluster that may be: compared, and replacing no machine
// unless --allow-rollout names it; --batch-size per push, at most --limit commits.
func (o *migrateOptions) commit(ctx context.Context, file *config.File, p *reconciler.Pipeline, events []*v1alpha1.ClusterEvent, reports []migrate.Report, stderr io.Writer) error {
	log := slog.New(slog.NewTextHandler(stderr, nil))
	var todo []*v1alpha1.ClusterEvent
	for i, rep := range reports {
		switch {
		case rep.Outcome == migrate.Refused:
			log.Warn("migrate: skipped", "cluster", rep.ClusterUUID, "name", rep.ClusterName, "reason", rep.Reason)
		case rep.ReplacesMachines() && !slices.Contains(o.allowRollout, rep.ClusterUUID) && !slices.Contains(o.allowRollout, rep.ClusterName):
			log.Warn("migrate: skipped: adopting it replaces machines (--allow-rollout names a cluster to commit anyway)",
				"cluster", rep.ClusterUUID, "name", rep.ClusterName, "rollout", strings.Join(rep.Rollout, "; "))
		default:
			todo = append(todo, events[i])
		}
	}
	sink, err := gitSink(ctx, file)
	if err != nil {
		return err
	}
	r, stop := runReconciler(ctx, p, sink, o.batchSize) // a group of --batch-size clusters to a push
	defer stop()
	committed, failed := 0, 0
	for start := 0; start < len(todo); start += o.batchSize {
		batch := todo[start:min(start+o.batchSize, len(todo))]
		if o.limit > 0 && committed+len(batch) > o.limit {
			batch = batch[:o.limit-committed]
		}
		if len(batch) == 0 {
			break
		}
		sums, before := r.SubmitAll(ctx, batch), failed
		for _, sum := range sums {
			logSummary(log, sum)
			switch {
			case sum.Err() != nil:
				failed++
			case !sum.NoOp:
				committed++
			}
		}
		if failed-before == len(batch) {
			break // none went through (the push, or Git): the next batch would not either
		}
	}
	if failed > 0 {
		return fmt.Errorf("migrate: %d of %d clusters failed to commit (see above)", failed, len(todo))
	}
	return nil
}

// readEvents decodes a YAML stream (or JSON documents) of ClusterEvents. A bad document
// refuses the whole run, naming it, before anything is read from the cluster or written.
func readEvents(stdin io.Reader, name string) ([]*v1alpha1.ClusterEvent, error) {
	data, err := readInput(stdin, name)
	if err != nil {
		return nil, config.Invalid(err)
	}
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var out []*v1alpha1.ClusterEvent
	for n := 1; ; n++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, config.Invalid(fmt.Errorf("%s: document %d: %w", name, n, err))
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		ev, err := reconciler.Decode(doc)
		if err != nil {
			return nil, inputError(fmt.Sprintf("%s: document %d", name, n), err)
		}
		out = append(out, ev)
	}
	if len(out) == 0 {
		return nil, config.Invalid(fmt.Errorf("%s: no ClusterEvent", name))
	}
	return out, nil
}

// writeMigrateTable prints one line per cluster, then the changes and rollouts under it.
func writeMigrateTable(w io.Writer, reports []migrate.Report) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSTACK ID\tNAMESPACE\tCHART\tOUTCOME\tREPLACES MACHINES\tCHANGES")
	for _, r := range reports {
		chart := r.Chart.Ours
		if r.Chart.Live != r.Chart.Ours && r.Chart.Live != "" {
			chart = r.Chart.Live + " → " + r.Chart.Ours
		}
		replaces := "no"
		if r.ReplacesMachines() {
			replaces = "yes"
		}
		if r.Outcome == migrate.Refused {
			replaces, chart = "-", "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\n", r.ClusterName, r.Release, r.Namespace, chart, r.Outcome, replaces, len(r.Changes))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range reports {
		if r.Outcome == migrate.Identical && len(r.Warnings) == 0 {
			continue
		}
		fmt.Fprintf(w, "\n%s (%s): %s\n", r.ClusterName, r.ClusterUUID, r.Outcome)
		if r.Reason != "" {
			fmt.Fprintf(w, "  %s\n", oneLine(r.Reason))
		}
		for _, c := range r.Changes {
			fmt.Fprintf(w, "  changes %s\n", c)
		}
		for _, ro := range r.Rollout {
			fmt.Fprintf(w, "  replaces machines: %s\n", ro)
		}
		for _, wn := range r.Warnings {
			fmt.Fprintf(w, "  warning: %s\n", wn)
		}
	}
	return nil
}
