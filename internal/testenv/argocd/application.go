package argocd

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// ApplicationGVK is the kind Argo CD reconciles. Applications are read and written as
// unstructured objects: the project does not import Argo CD's Go API.
var ApplicationGVK = schema.GroupVersionKind{Group: "argoproj.io", Version: "v1alpha1", Kind: "Application"}

// refreshAnnotation asks the controller for a comparison now, as `argocd app get
// --refresh` and Git webhooks do; the controller removes it once it has compared.
const refreshAnnotation = "argocd.argoproj.io/refresh"

// Application reads the Application name in Namespace as the API server returns it.
func (a *Argo) Application(name string) *unstructured.Unstructured {
	a.t.Helper()
	app, err := a.get(context.Background(), name)
	if err != nil {
		a.t.Fatalf("reading Application %s/%s: %v", Namespace, name, err)
	}
	return app
}

func (a *Argo) get(ctx context.Context, name string) (*unstructured.Unstructured, error) {
	app := &unstructured.Unstructured{}
	app.SetGroupVersionKind(ApplicationGVK)
	return app, a.Client.Get(ctx, client.ObjectKey{Namespace: Namespace, Name: name}, app)
}

// Refresh asks the controller to compare the Application with Git now instead of at the
// next reconciliation: "normal" re-resolves the branch, "hard" also drops the
// repo-server's cached manifests.
func (a *Argo) Refresh(name, kind string) {
	a.t.Helper()
	app := &unstructured.Unstructured{}
	app.SetGroupVersionKind(ApplicationGVK)
	app.SetNamespace(Namespace)
	app.SetName(name)
	patch := []byte(`{"metadata":{"annotations":{"` + refreshAnnotation + `":"` + kind + `"}}}`)
	if err := a.Client.Patch(context.Background(), app, client.RawPatch("application/merge-patch+json", patch)); err != nil {
		a.t.Fatalf("refreshing Application %s/%s: %v", Namespace, name, err)
	}
}

// WaitFor polls the Application until done says it is in the state the test waits for,
// and returns it then. After timeout the test fails with what done said of the last
// state seen, that state, and the end of every log.
func (a *Argo) WaitFor(name string, timeout time.Duration, done func(app *unstructured.Unstructured) (bool, string)) *unstructured.Unstructured {
	a.t.Helper()
	deadline := time.Now().Add(timeout)
	var why string
	var last *unstructured.Unstructured
	for {
		app, err := a.get(context.Background(), name)
		if err == nil {
			last = app
			var ok bool
			if ok, why = done(app); ok {
				return app
			}
		} else {
			why = err.Error()
		}
		if time.Now().After(deadline) {
			state := "(none)"
			if last != nil {
				b, _ := yaml.Marshal(last.Object["status"])
				state = string(b)
			}
			a.t.Fatalf("Application %s/%s: not there after %s: %s\nlast status:\n%s\n%s", Namespace, name, timeout, why, state, a.Logs())
		}
		time.Sleep(time.Second)
	}
}

// Strip removes from an object what says which API server, and when, it came from
// (metadata.managedFields, uid, resourceVersion and creationTimestamp), and keeps
// everything else, the status's own timestamps too: a recorded Application then shows the status as the controller
// wrote it. It returns a copy.
func Strip(obj *unstructured.Unstructured) *unstructured.Unstructured {
	out := obj.DeepCopy()
	for _, f := range []string{"managedFields", "uid", "resourceVersion", "creationTimestamp"} {
		unstructured.RemoveNestedField(out.Object, "metadata", f)
	}
	return out
}
