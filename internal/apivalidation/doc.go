// Package apivalidation holds tests only: every manifest magnum-gitops generates, and every
// object the openstack-cluster chart renders from our values, is sent to a real
// kube-apiserver with the real CRD schemas, which must accept it.
package apivalidation
