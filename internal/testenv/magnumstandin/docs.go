package magnumstandin

// Timestamps as Magnum's API writes them (UTC with an explicit offset).
const (
	// Created is when the documents below were created.
	Created = "2026-01-01T00:00:00+00:00"
)

// ClusterDoc is a cluster as GET /v1/clusters/detail shows it at microversion 1.10: three
// masters and three workers of the template's flavors, CREATE_IN_PROGRESS, no stack_id
// yet. Tests change fields as Magnum would (keep node_count and master_count the sums of
// the node groups: Data.SyncCounts).
func ClusterDoc(uuid, name, projectID, userID, templateID string) map[string]any {
	return map[string]any{
		"uuid": uuid, "name": name, "cluster_template_id": templateID, "keypair": "ops-key",
		"docker_volume_size": nil, "labels": map[string]string{}, "labels_overridden": map[string]string{},
		"labels_added": map[string]string{}, "labels_skipped": map[string]string{},
		"master_flavor_id": "m1.large", "flavor_id": "m1.medium", "create_timeout": 60,
		"stack_id": nil, "status": "CREATE_IN_PROGRESS", "status_reason": nil,
		"health_status": nil, "health_status_reason": map[string]string{},
		"discovery_url": nil, "api_address": nil, "project_id": projectID, "user_id": userID,
		"coe_version": nil, "container_version": nil, "fixed_network": nil, "fixed_subnet": nil,
		"floating_ip_enabled": true, "master_lb_enabled": true, "node_count": 3, "master_count": 3,
		"node_addresses": []string{}, "master_addresses": []string{},
		"created_at": Created, "updated_at": nil, "links": []any{}, "faults": map[string]string{},
	}
}

// TemplateDoc is a public Kubernetes cluster template using image (a Glance name or id),
// the external network "public", calico and the given labels; "driver" is the field Magnum
// 2024.1 added (k8s_capi_helm_v1, the Cluster API Helm driver).
func TemplateDoc(uuid, name, image string, labels map[string]string) map[string]any {
	return map[string]any{
		"uuid": uuid, "name": name, "image_id": image, "keypair_id": "ops-key",
		"external_network_id": "public", "fixed_network": nil, "fixed_subnet": nil,
		"dns_nameserver": "8.8.8.8", "network_driver": "calico", "flavor_id": "m1.medium",
		"master_flavor_id": "m1.large", "floating_ip_enabled": true, "master_lb_enabled": true,
		"coe": "kubernetes", "cluster_distro": "ubuntu", "driver": "k8s_capi_helm_v1",
		"public": true, "hidden": false, "labels": labels, "server_type": "vm",
		"apiserver_port": nil, "docker_volume_size": nil, "volume_driver": "cinder",
		"registry_enabled": false, "tls_disabled": false, "insecure_registry": nil,
		"project_id": "admin", "user_id": "admin", "created_at": Created, "updated_at": nil, "links": []any{},
	}
}

// NodeGroupDoc is a node group as GET /v1/clusters/{id}/nodegroups/{id} shows it at
// microversion 1.10: role "master" gets m1.large and min_node_count 1, any other role
// m1.medium; default-master and default-worker are Magnum's default groups.
func NodeGroupDoc(clusterUUID, uuid, name, role string, nodeCount int) map[string]any {
	flavor := "m1.medium"
	if role == "master" {
		flavor = "m1.large"
	}
	return map[string]any{
		"uuid": uuid, "name": name, "cluster_id": clusterUUID, "project_id": "p",
		"docker_volume_size": nil, "labels": map[string]string{}, "labels_overridden": map[string]string{},
		"labels_added": map[string]string{}, "labels_skipped": map[string]string{}, "links": []any{},
		"flavor_id": flavor, "image_id": nil, "node_addresses": []string{}, "node_count": nodeCount,
		"role": role, "min_node_count": 1, "max_node_count": nil, "stack_id": nil,
		"status": "CREATE_IN_PROGRESS", "status_reason": nil, "version": nil,
		"created_at": Created, "updated_at": nil,
		"is_default": name == "default-master" || name == "default-worker",
	}
}
