package generator

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Object is a typed Kubernetes object the generator writes: what controller-runtime calls a
// client.Object, declared here so the generator needs no client package.
type Object interface {
	metav1.Object
	runtime.Object
}
