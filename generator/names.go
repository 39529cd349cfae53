package generator

// The checks of the names and ids a render writes into object names and label values
// (their patterns are in charset.go). The Kubernetes forms with a length limit are asked of
// k8s.io/apimachinery's validation package where they are checked (render.go).

// isProjectID reports whether s is what a Keystone project (or user) id can be made of. The
// driver silently deletes everything else when it builds the namespace; refusing instead
// keeps two odd ids from sharing one namespace.
func isProjectID(s string) bool { return projectIDPattern.MatchString(s) }

// isDNSLabelForm reports whether s is a DNS-1123 label without its length limit: the form
// every object named after R must have.
func isDNSLabelForm(s string) bool { return dnsLabelPattern.MatchString(s) }

// isNodeGroupName is the openstack-cluster chart's own check of node group names (chart
// >= 0.15), ^[a-z][a-z0-9-]+[a-z0-9]$: at least 3 characters.
func isNodeGroupName(s string) bool { return nodeGroupNamePattern.MatchString(s) }

// isKubeVersion reports whether s is a Kubernetes version without its "v" (1.33.7).
func isKubeVersion(s string) bool { return kubeVersionPattern.MatchString(s) }
