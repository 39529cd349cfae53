package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"sigs.k8s.io/yaml"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/internal/config"
	"github.com/magnum-gitops/magnum-gitops/reconciler/migrate"
	"github.com/magnum-gitops/magnum-gitops/reconciler/openstack"
	"github.com/magnum-gitops/magnum-gitops/reconciler/poller"
)

// templates is the template selection of --source magnum: the flags, else the
// configuration's openstack.poller.select; checked before OpenStack is reached.
func (o *migrateOptions) templates(c *config.OpenStack) (func(openstack.ClusterTemplate) bool, error) {
	if !openstackConfigured(c) {
		return nil, config.Invalid(errors.New("--source magnum: needs the openstack section (or OS_* variables)"))
	}
	label, driver := c.Poller.Select.Label, c.Poller.Select.Driver
	if o.templateLabel != "" || o.templateDriver != "" {
		label, driver = o.templateLabel, o.templateDriver
	}
	if label == "" && driver == "" {
		return nil, config.Invalid(errors.New("--source magnum: set --template-label or --template-driver (or openstack.poller.select): migrating every cluster of a cloud by accident is not an option"))
	}
	sel, err := poller.SelectTemplates(label, driver)
	if err != nil {
		return nil, config.Invalid(fmt.Errorf("--template-label: %w", err))
	}
	return sel, nil
}

// fromMagnum lists the clusters of the templates sel picks from Magnum's API, as the
// poller of serve --source magnum reads them. A cluster Magnum is operating on, or that
// cannot be read whole, is refused: adopting it in the middle of the driver's operation
// would race the driver.
func fromMagnum(ctx context.Context, c *config.OpenStack, cloud *openstack.Cloud, sel func(openstack.ClusterTemplate) bool) ([]*v1alpha1.ClusterEvent, []migrate.Report, error) {
	m, err := openstack.NewMagnum(cloud)
	if err != nil {
		return nil, nil, err
	}
	authURL, _, err := cloud.IdentityEndpoint()
	if err != nil {
		return nil, nil, err
	}
	poller := &poller.Poller{Magnum: m, Select: sel, AuthURL: authURL, PageSize: c.Poller.PageSize}
	listed, err := poller.List(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("magnum: %w", err)
	}
	var events []*v1alpha1.ClusterEvent
	var refused []migrate.Report
	for _, mc := range listed {
		switch {
		case mc.Err != nil:
			refused = append(refused, migrate.Refuse(mc.UUID, mc.Name, mc.Err))
		case mc.Status.Outcome() == v1alpha1.InProgress:
			refused = append(refused, migrate.Refuse(mc.UUID, mc.Name,
				fmt.Errorf("the cluster is %s in Magnum: migrate it once the operation is done", mc.Status)))
		default:
			events = append(events, mc.Event)
		}
	}
	return events, refused, nil
}

// openstackConfigured reports whether OpenStack can be reached: the openstack section
// names a cloud, or the OS_* variables do, as every OpenStack client reads them.
func openstackConfigured(c *config.OpenStack) bool {
	return c.Cloud != "" || c.CloudsFile != "" || os.Getenv("OS_AUTH_URL") != "" || os.Getenv("OS_CLOUD") != ""
}

// writeEvents prints events as a YAML stream, the input of migrate -f.
func writeEvents(w io.Writer, events []*v1alpha1.ClusterEvent) error {
	for _, ev := range events {
		doc, err := yaml.Marshal(ev)
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintf(w, "---\n%s", doc); err != nil {
			return err
		}
	}
	return nil
}
