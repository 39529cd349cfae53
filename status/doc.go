// Package status reads Flux HelmReleases and Cluster API objects back into Magnum cluster
// status, node group status and health. The mapping is a pure function over fetched
// objects; reading and reporting happen at the edges.
package status
