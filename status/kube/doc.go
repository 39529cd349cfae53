// Package kube reads the management cluster for the status judgement: an informer cache
// scoped by label to the objects magnum-gitops, the openstack-cluster chart and Cluster API
// write, and a status.Source over it. Everything that talks to the API server is here, so
// package status stays a pure function of fetched objects.
package kube
