// Package openstack is magnum-gitops's side of OpenStack, through gophercloud:
//
//   - Connect authenticates the way operators configure OpenStack clients (a clouds.yaml
//     entry or OS_* variables, with CA file, insecure flag, region and interface);
//   - AppCredentials creates, rotates and deletes the per-cluster Keystone application
//     credentials the magnum-capi-helm driver would create;
//   - Resolver fills what a ClusterEvent leaves out of its "resolved" section (Glance image,
//     Neutron networks and subnets, Cinder volume types, Nova flavors, the public identity
//     endpoint and region), with a short shared cache so bursts cost O(1) calls;
//   - Magnum lists clusters, cluster templates and node groups for a poller.
//
// Errors that blame an input field are *v1alpha1.FieldError (terminal: retrying the same
// event cannot help); other errors (transport, authentication, server) are retryable. No
// error or log line carries a secret.
package openstack
