package kube

import (
	"context"
	"os"
	"strconv"

	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coordinationv1 "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// LeaderElector returns a function that blocks until this process holds the Lease
// namespace/name and then returns a context that ends when it stops holding it. The
// identity is the host name (the pod name in a Deployment) and the process id.
func LeaderElector(cfg *rest.Config, namespace, name string) func(context.Context) (context.Context, error) {
	host, _ := os.Hostname()
	id := host + "_" + strconv.Itoa(os.Getpid())
	return func(ctx context.Context) (context.Context, error) {
		c, err := coordinationv1.NewForConfig(cfg)
		if err != nil {
			return nil, err
		}
		lock := &resourcelock.LeaseLock{LeaseMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
			Client: c, LockConfig: resourcelock.ResourceLockConfig{Identity: id}}
		led := make(chan context.Context, 1)
		le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
			Lock: lock, LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second,
			ReleaseOnCancel: true, Name: name,
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: func(lctx context.Context) { led <- lctx; <-lctx.Done() },
				OnStoppedLeading: func() {},
			}})
		if err != nil {
			return nil, err
		}
		go le.Run(ctx)
		select {
		case l := <-led:
			return l, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}
