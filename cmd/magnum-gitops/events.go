package main

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"

	"github.com/magnum-gitops/magnum-gitops/reconciler/service"
)

// eventRecorder records serve's Kubernetes Events on a management cluster through
// client-go's broadcaster, which batches and aggregates them as every controller's do;
// stop flushes it at exit.
func eventRecorder(cfg *rest.Config) (rec service.EventRecorder, stop func(), err error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	b := record.NewBroadcaster()
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: cs.CoreV1().Events("")})
	return b.NewRecorder(clientgoscheme.Scheme, corev1.EventSource{Component: "magnum-gitops"}), b.Shutdown, nil
}
