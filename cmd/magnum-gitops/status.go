package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/magnum-gitops/magnum-gitops/generator"
	"github.com/magnum-gitops/magnum-gitops/internal/config"
	"github.com/magnum-gitops/magnum-gitops/status"
	"github.com/magnum-gitops/magnum-gitops/status/kube"
)

type statusOptions struct {
	kubeconfig                                    string
	objectsFile                                   string
	magnumFiles                                   []string
	output                                        string
	configFile                                    string
	timeout                                       time.Duration
	updateTimeout, deleteTimeout, machineDeadline time.Duration
	revision, kustomization                       string
}

func newStatusCommand() *cobra.Command {
	o := &statusOptions{}
	cmd := &cobra.Command{
		Use:   "status [CLUSTER...]",
		Short: "Show Magnum status and health of clusters from Flux and Cluster API objects",
		Long: `Judge clusters from the management cluster's objects (the Flux HelmRelease, the CAPI
Cluster, KubeadmControlPlane, MachineDeployments, Machines, OpenStackCluster and addons)
and print the Magnum view: status, status_reason, node groups, node counts, api_address,
coe_version, health_status and health_status_reason.

The Magnum side comes from ClusterEvent documents (--magnum, repeatable) whose cluster
and node groups carry their current status; without them, every HelmRelease managed by
magnum-gitops is shown as if its operation were in progress. CLUSTER filters by stack_id,
name or UUID.

Offline, --objects reads the objects from a multi-document YAML file instead of an API
server.`,
		Example: `  magnum-gitops status --kubeconfig mgmt.kubeconfig -o tree
  magnum-gitops status --objects objects.yaml --magnum event.yaml -o json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd.Context(), cmd.InOrStdin(), cmd.OutOrStdout(), args)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "management cluster kubeconfig (default: $KUBECONFIG, ~/.kube/config, in-cluster)")
	f.StringVar(&o.objectsFile, "objects", "", "read the objects from this YAML file instead of an API server")
	f.StringArrayVar(&o.magnumFiles, "magnum", nil, "ClusterEvent document with the cluster's current Magnum status (repeatable)")
	f.StringVarP(&o.output, "output", "o", "table", "output format: table, json or tree")
	f.StringVar(&o.configFile, "config", "", "configuration file (namespace prefix)")
	f.DurationVar(&o.timeout, "request-timeout", 30*time.Second, "how long to wait for the API server")
	f.StringVar(&o.revision, "revision", "", "Git commit of the operation: until Flux has applied it, the cluster is waiting for Flux")
	f.StringVar(&o.kustomization, "kustomization", "", "namespace/name of the Flux Kustomization that applies the repository, or with format: argo its parent Application (default flux-system/magnum-clusters, argocd/magnum-clusters)")
	f.DurationVar(&o.updateTimeout, "update-timeout", time.Hour, "an update not complete after this is UPDATE_FAILED (create uses the cluster's create_timeout)")
	f.DurationVar(&o.deleteTimeout, "delete-timeout", time.Hour, "a delete not complete after this is DELETE_FAILED")
	f.DurationVar(&o.machineDeadline, "machine-failure-deadline", 15*time.Minute, "how long a Machine may report an infrastructure error before the operation fails")
	return cmd
}

func (o *statusOptions) run(ctx context.Context, stdin io.Reader, w io.Writer, filter []string) error {
	if o.output != "table" && o.output != "json" && o.output != "tree" {
		return config.Invalid(fmt.Errorf("--output: unknown format %q (table, json, tree)", o.output))
	}
	if ctx == nil {
		ctx = context.Background()
	}
	file, err := loadConfig(ctx, o.configFile)
	if err != nil {
		return err
	}
	var views []status.View
	opts := configuredStatusOptions(file, time.Now())
	opts.UpdateTimeout, opts.DeleteTimeout, opts.MachineFailureDeadline = o.updateTimeout, o.deleteTimeout, o.machineDeadline
	for _, f := range o.magnumFiles {
		ev, err := decodeInput(stdin, f)
		if err != nil {
			return err
		}
		views = append(views, status.ViewFromEvent(ev, file.Magnum.CapiHelm.NamespacePrefix))
		opts = status.OptionsFor(ev, opts)
	}
	src, err := o.source(ctx)
	if err != nil {
		return err
	}
	tctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	snap, snapErr := status.TakeSnapshot(tctx, src, status.KindsOf(file.Format == generator.FormatArgo))
	if snapErr == nil {
		snap.Kustomization = cmp.Or(o.kustomization, defaultApplier(file))
		snap.PerNamespace = file.Config.LayoutNamespace()
	}
	if len(views) == 0 {
		if snapErr != nil {
			return snapErr
		}
		views = snap.Discover()
	}
	views = filterViews(views, filter)
	for i := range views {
		views[i].Revision = o.revision
	}
	reports := make([]status.Report, len(views))
	objects := make([]status.Objects, len(views))
	for i, v := range views {
		if snapErr != nil {
			reports[i] = status.Unreadable(v, snapErr)
			continue
		}
		objects[i] = snap.Objects(v)
		reports[i] = status.Evaluate(v, objects[i], opts)
	}
	switch o.output {
	case "json":
		if len(reports) == 1 {
			return writeJSON(w, reports[0])
		}
		return writeJSON(w, reports)
	case "tree":
		for i := range reports {
			printStatusTree(w, views[i], objects[i], reports[i])
		}
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSTACK ID\tSTATUS\tHEALTH\tNODES\tVERSION\tREASON")
	for i, r := range reports {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d+%d\t%s\t%s\n", views[i].Name, r.StackID, r.Status, r.HealthStatus, r.MasterCount, r.NodeCount, r.COEVersion, r.StatusReason)
	}
	return tw.Flush()
}

// source reads the objects from --objects, or from the management cluster.
func (o *statusOptions) source(ctx context.Context) (status.Source, error) {
	if o.objectsFile == "" {
		c, _, err := kube.StartCache(ctx, o.kubeconfig, o.timeout)
		if err != nil {
			return nil, err
		}
		return kube.Source{Reader: c}, nil
	}
	fh, err := os.Open(o.objectsFile)
	if err != nil {
		return nil, config.Invalid(err)
	}
	defer fh.Close()
	objs, err := status.LoadObjects(fh)
	if err != nil {
		return nil, config.Invalid(fmt.Errorf("%s: %w", o.objectsFile, err))
	}
	return status.StaticSource(objs), nil
}

func filterViews(views []status.View, filter []string) []status.View {
	if len(filter) == 0 {
		return views
	}
	var out []status.View
	for _, v := range views {
		for _, f := range filter {
			if f == v.StackID || f == v.Name || f == v.ClusterUUID || f == v.Namespace+"/"+v.StackID {
				out = append(out, v)
				break
			}
		}
	}
	return out
}

// printStatusTree prints a cluster like clusterctl describe cluster: each object with
// its state and message.
func printStatusTree(w io.Writer, v status.View, o status.Objects, r status.Report) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "NAME\tREADY\tREASON\tMESSAGE\n")
	row := func(prefix, name string, obj *unstructured.Unstructured, readyType string) {
		if obj == nil {
			fmt.Fprintf(tw, "%s%s\t-\tNotFound\t\n", prefix, name)
			return
		}
		c := status.ReadConditions(obj)
		cond := c.V1Beta1(readyType)
		if cond.Status == status.Unknown {
			cond = c.V1Beta2(readyType)
		}
		if cond.Status == status.Unknown && readyType == "Ready" {
			if a := c.V1Beta2("Available"); a.Status != status.Unknown {
				cond = a
			}
		}
		fmt.Fprintf(tw, "%s%s\t%s\t%s\t%s\n", prefix, name, cond.Status, cond.Reason, oneLine(cond.Message))
	}
	fmt.Fprintf(tw, "Cluster/%s (%s: %s, %s)\t\t\t%s\n", v.StackID, cmp.Or(v.Name, v.ClusterUUID), r.Status, r.HealthStatus, r.StatusReason)
	row("├─ HelmRelease.helm.toolkit.fluxcd.io/", v.StackID, o.HelmRelease, "Ready")
	row("├─ Cluster/", v.StackID, o.Cluster, "Ready")
	row("├─ ClusterInfrastructure OpenStackCluster/", v.StackID, o.InfraCluster, "Ready")
	row("├─ ControlPlane KubeadmControlPlane/", v.StackID+"-control-plane", o.ControlPlane, "Ready")
	fmt.Fprintf(tw, "├─ Workers\t\t\t\n")
	for _, md := range o.MachineDeployments {
		row("│  ├─ MachineDeployment/", md.GetName(), md, "Ready")
	}
	for _, m := range o.Machines {
		row("│  └─ Machine/", m.GetName(), m, "InfrastructureReady")
	}
	fmt.Fprintf(tw, "└─ Addons\t\t\t\n")
	for _, a := range o.Addons {
		phase, _, _ := unstructured.NestedString(a.Object, "status", "phase")
		msg, _, _ := unstructured.NestedString(a.Object, "status", "failureMessage")
		fmt.Fprintf(tw, "   ├─ %s/%s\t%s\t\t%s\n", a.GetKind(), a.GetName(), cmp.Or(phase, "Unknown"), oneLine(msg))
	}
	tw.Flush()
	fmt.Fprintln(w)
}

func oneLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i] + " …"
	}
	return s
}
