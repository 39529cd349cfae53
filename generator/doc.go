// Package generator turns a Magnum cluster event into the objects a GitOps repository holds
// for it: the values of the azimuth openstack-cluster chart, a Flux HelmRelease and its
// chart source, the Namespace, the credential and CA Secrets, and a kustomization.yaml.
//
// The package is pure: it performs no I/O, reads no clock and draws no random numbers, so
// the same event and configuration always render byte-identical output. Facts the
// magnum-capi-helm driver looks up in OpenStack at render time (the Glance image, Neutron
// names, Cinder volume types, Nova flavors, the Keystone endpoint) arrive in the event's
// "resolved" section, filled by the caller.
//
// The rules follow magnum-capi-helm 1.4.0 so that Flux adopts releases the Python driver
// created: same release name, namespace, Secret names and values. Where the driver is wrong
// for the chart version it targets, the generator renders what the chart needs and records
// a Deviation in the Result.
package generator
