package openstack_test

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/gophercloud/gophercloud/v2/openstack/image/v2/images"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/internal/testenv/keystone"
	"github.com/magnum-gitops/magnum-gitops/reconciler/openstack"
)

// IDs served by the stand-ins.
const (
	publicNetID  = "d1f02cfb-d27f-4068-9332-84d907cb0e2e"
	privateNetID = "5b8f5e2c-3d0a-4c1e-9f6a-7e2d1c0b9a81"
	ownNetID     = "8c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f"
	subnetID     = "a3c4e5f6-0b1c-4d2e-8f3a-4b5c6d7e8f90"
	otherProject = "4f3e2d1c0b9a48f7e6d5c4b3a2918070"
)

// resolverFixture is a real Keystone and Glance plus Neutron, Cinder and Nova stand-ins,
// all in one test region of the catalog, and a session counting its requests per host.
type resolverFixture struct {
	ks                    *keystone.Keystone
	glance                *keystone.Glance
	region, projectID     string
	neutron, cinder, nova *standIn
	counter               *counter
	cloud                 *openstack.Cloud
	imageName             string // public image with kube_version and os_distro
	imageID               string
	dupImage              string // two public images share this name
	noKubeImage           string // has os_distro only
}

func newResolverFixture(t *testing.T) *resolverFixture {
	ks := keystone.Start(t)
	clearOSEnv(t)
	f := &resolverFixture{ks: ks, glance: ks.StartGlance(t), region: ks.NewRegion(t), counter: newCounter()}
	f.glance.Register(t, f.region)
	var projectName string
	f.projectID, projectName = ks.CreateProject(t)
	user := ks.CreateUser(t, f.projectID, "member")

	// Glance is shared by the test binary: names are made unique per test.
	suffix := strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	public := func() *images.ImageVisibility { v := images.ImageVisibilityPublic; return &v }
	f.imageName, f.dupImage, f.noKubeImage = "ubuntu-2404-kube-v1.33.7-"+suffix, "dup-"+suffix, "nokube-"+suffix
	f.imageID = f.glance.CreateImage(t, images.CreateOpts{Name: f.imageName, Visibility: public(),
		Properties: map[string]string{"kube_version": "v1.33.7", "os_distro": "ubuntu"}}).ID
	for range 2 {
		f.glance.CreateImage(t, images.CreateOpts{Name: f.dupImage, Visibility: public(),
			Properties: map[string]string{"kube_version": "v1.32.1", "os_distro": "ubuntu"}})
	}
	f.glance.CreateImage(t, images.CreateOpts{Name: f.noKubeImage, Visibility: public(),
		Properties: map[string]string{"os_distro": "flatcar"}})

	f.neutron = newNeutron(t, ks, []network{
		{ID: publicNetID, Name: "public", ProjectID: otherProject, External: true},
		{ID: privateNetID, Name: "private", ProjectID: f.projectID},
		// Two projects' networks share a name; an admin would see both.
		{ID: ownNetID, Name: "shared-name", ProjectID: f.projectID},
		{ID: "0e1f2a3b-4c5d-4e6f-8a9b-0c1d2e3f4a5b", Name: "shared-name", ProjectID: otherProject},
		{ID: "1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d", Name: "twice", ProjectID: otherProject},
		{ID: "2b3c4d5e-6f7a-4b8c-9d0e-1f2a3b4c5d6e", Name: "twice", ProjectID: otherProject},
	}, []subnet{{ID: subnetID, Name: "private-subnet", NetworkID: privateNetID, ProjectID: f.projectID, CIDR: "10.0.0.0/24"}})
	f.cinder = newCinder(t, ks, []string{"__DEFAULT__", "ssd.fast", "HDD_Slow"})
	f.nova = newNova(t, ks, []flavor{{ID: "1", Name: "m1.tiny", VCPUs: 1, RAM: 512}, {ID: "2", Name: "m1.medium", VCPUs: 2, RAM: 4096}, {ID: "3", Name: "m1.large", VCPUs: 4, RAM: 8192}})
	ks.RegisterService(t, f.region, "network", "neutron", f.neutron.URL)
	// As devstack registers Cinder: the old type name and the project in the URL.
	ks.RegisterService(t, f.region, "volumev3", "cinderv3", f.cinder.URL+"/v3/$(project_id)s")
	ks.RegisterService(t, f.region, "compute", "nova", f.nova.URL+"/v2.1")

	f.cloud = connect(t, passwordCloud(ks, user, projectName, f.region), openstack.Config{Transport: f.counter})
	return f
}

// event is a create_cluster event naming everything by name, with nothing resolved.
func (f *resolverFixture) event() *v1alpha1.ClusterEvent {
	return &v1alpha1.ClusterEvent{
		APIVersion: v1alpha1.APIVersion, Kind: v1alpha1.EventKind, Operation: v1alpha1.CreateCluster,
		Cluster: v1alpha1.Cluster{UUID: clusterUUID, Name: "prod-a", ProjectID: f.projectID,
			MasterFlavorID: "m1.large", FlavorID: "2", FixedNetwork: "private", FixedSubnet: "private-subnet"},
		ClusterTemplate: v1alpha1.ClusterTemplate{ImageID: f.imageName, ExternalNetworkID: "public"},
		NodeGroups: []v1alpha1.NodeGroup{
			{Name: "default-master", Role: "master", FlavorID: "m1.large", NodeCount: 3},
			{Name: "default-worker", Role: "worker", FlavorID: "2", NodeCount: 3},
		},
	}
}

// glanceRequests is how many requests the session sent to Glance.
func (f *resolverFixture) glanceRequests() int {
	u, _ := url.Parse(f.glance.URL)
	return f.counter.hostCount(u.Host)
}

func (f *resolverFixture) fullyResolved() v1alpha1.Resolved {
	return v1alpha1.Resolved{
		Image:             &v1alpha1.Image{ID: f.imageID, KubeVersion: "v1.33.7", OSDistro: "ubuntu"},
		Networks:          map[string]string{"public": publicNetID, "private": privateNetID},
		Subnets:           map[string]string{"private-subnet": subnetID},
		VolumeTypes:       []string{"__DEFAULT__", "ssd.fast", "HDD_Slow"},
		Flavors:           map[string]v1alpha1.Flavor{"m1.large": {VCPUs: 4, RAMMB: 8192, DiskGB: 20}, "2": {VCPUs: 2, RAMMB: 4096, DiskGB: 20}},
		KeystonePublicURL: f.ks.AuthURL,
		RegionName:        f.region,
	}
}

func TestResolveFillsWhatTheEventLeavesOut(t *testing.T) {
	f := newResolverFixture(t)
	pinnedImage := &v1alpha1.Image{ID: "7d1c2b3a-4e5f-4a6b-8c7d-9e0f1a2b3c4d", KubeVersion: "v1.31.2", OSDistro: "flatcar"}
	tests := []struct {
		name   string
		change func(*v1alpha1.ClusterEvent)
		want   func(*v1alpha1.Resolved)
		// calls expected per stand-in path prefix (only the ones the case is about)
		calls    map[*standIn]map[string]int
		noGlance bool
	}{
		{name: "everything, by name", change: func(*v1alpha1.ClusterEvent) {}, want: func(*v1alpha1.Resolved) {}},
		{name: "image by id", change: func(ev *v1alpha1.ClusterEvent) { ev.ClusterTemplate.ImageID = f.imageID },
			want: func(*v1alpha1.Resolved) {}},
		{name: "pinned facts are kept and not looked up",
			change: func(ev *v1alpha1.ClusterEvent) {
				ev.Resolved = v1alpha1.Resolved{Image: pinnedImage, VolumeTypes: []string{"only"},
					Flavors: map[string]v1alpha1.Flavor{}, KeystonePublicURL: "https://keystone.example.org/v3", RegionName: "Elsewhere"}
			},
			want: func(r *v1alpha1.Resolved) {
				r.Image, r.VolumeTypes, r.Flavors = pinnedImage, []string{"only"}, map[string]v1alpha1.Flavor{}
				r.KeystonePublicURL, r.RegionName = "https://keystone.example.org/v3", "Elsewhere"
			},
			calls:    map[*standIn]map[string]int{f.cinder: {"/": 0}, f.nova: {"/": 0}},
			noGlance: true},
		{name: "UUIDs are used as they are, like the driver",
			change: func(ev *v1alpha1.ClusterEvent) {
				ev.ClusterTemplate.ExternalNetworkID = publicNetID
				ev.Cluster.FixedNetwork, ev.Cluster.FixedSubnet = privateNetID, subnetID
			},
			want:  func(r *v1alpha1.Resolved) { r.Networks, r.Subnets = nil, nil },
			calls: map[*standIn]map[string]int{f.neutron: {"/v2.0/": 0}}},
		{name: "the template's fixed network when the cluster has none",
			change: func(ev *v1alpha1.ClusterEvent) {
				ev.Cluster.FixedNetwork, ev.ClusterTemplate.FixedNetwork = "", "shared-name"
			},
			// Two networks are named so; the event's project owns one of them.
			want: func(r *v1alpha1.Resolved) {
				r.Networks = map[string]string{"public": publicNetID, "shared-name": ownNetID}
			}},
		{name: "an image's missing properties are completed",
			change: func(ev *v1alpha1.ClusterEvent) {
				ev.Resolved.Image = &v1alpha1.Image{ID: f.imageID, OSDistro: "custom"}
			},
			want: func(r *v1alpha1.Resolved) { r.Image.OSDistro = "custom" }},
		{name: "a flavor Nova does not list is left out (the generator reports it)",
			change: func(ev *v1alpha1.ClusterEvent) {
				ev.Cluster.MasterFlavorID = "m1.gone"
				ev.NodeGroups[0].FlavorID = "m1.gone"
			},
			want: func(r *v1alpha1.Resolved) {
				r.Flavors = map[string]v1alpha1.Flavor{"2": {VCPUs: 2, RAMMB: 4096, DiskGB: 20}}
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ev := f.event()
			tc.change(ev)
			want := f.fullyResolved()
			tc.want(&want)
			before := map[*standIn]map[string]int{}
			for s, paths := range tc.calls {
				before[s] = map[string]int{}
				for p := range paths {
					before[s][p] = s.Count(p)
				}
			}
			glanceBefore := f.glanceRequests()

			// A fresh resolver: nothing cached from the other cases.
			if err := openstack.NewResolver(f.cloud, openstack.ResolverOptions{}).Resolve(t.Context(), ev); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, ev.Resolved); diff != "" {
				t.Fatalf("resolved (-want +got):\n%s", diff)
			}
			for s, paths := range tc.calls {
				for p, n := range paths {
					if got := s.Count(p) - before[s][p]; got != n {
						t.Errorf("%d requests to %s%s, want %d: %v", got, s.URL, p, n, s.Log())
					}
				}
			}
			if tc.noGlance && f.glanceRequests() != glanceBefore {
				t.Errorf("%d requests to Glance, want none", f.glanceRequests()-glanceBefore)
			}
		})
	}
}

func TestResolveReportsEveryInputError(t *testing.T) {
	f := newResolverFixture(t)
	tests := []struct {
		name   string
		change func(*v1alpha1.ClusterEvent)
		want   []v1alpha1.FieldError // Message is a substring
	}{
		{"image name not found", func(ev *v1alpha1.ClusterEvent) { ev.ClusterTemplate.ImageID = "no-such-image" },
			[]v1alpha1.FieldError{{Field: "cluster_template.image_id", Message: "images no-such-image could not be found."}}},
		{"image id not found", func(ev *v1alpha1.ClusterEvent) { ev.ClusterTemplate.ImageID = "0f0e0d0c-0b0a-4090-8070-605040302010" },
			[]v1alpha1.FieldError{{Field: "cluster_template.image_id", Message: "could not be found"}}},
		{"image name ambiguous", func(ev *v1alpha1.ClusterEvent) { ev.ClusterTemplate.ImageID = f.dupImage },
			[]v1alpha1.FieldError{{Field: "cluster_template.image_id", Message: "Multiple images exist with same name " + f.dupImage}}},
		{"image without kube_version", func(ev *v1alpha1.ClusterEvent) { ev.ClusterTemplate.ImageID = f.noKubeImage },
			[]v1alpha1.FieldError{{Field: "cluster_template.image_id", Message: "does not have a kube_version property."}}},
		{"template without image", func(ev *v1alpha1.ClusterEvent) { ev.ClusterTemplate.ImageID = "" },
			[]v1alpha1.FieldError{{Field: "cluster_template.image_id", Message: "required"}}},
		{"pinned image id unknown to Glance",
			func(ev *v1alpha1.ClusterEvent) {
				ev.Resolved.Image = &v1alpha1.Image{ID: "0f0e0d0c-0b0a-4090-8070-605040302010"}
			},
			[]v1alpha1.FieldError{{Field: "resolved.image.id", Message: "could not be found"}}},
		{"pinned image id that is no UUID",
			func(ev *v1alpha1.ClusterEvent) { ev.Resolved.Image = &v1alpha1.Image{ID: f.imageName} },
			[]v1alpha1.FieldError{{Field: "resolved.image.id", Message: "is not a Glance image UUID"}}},
		{"everything wrong at once: each field named, in order",
			func(ev *v1alpha1.ClusterEvent) {
				ev.ClusterTemplate.ImageID = "no-such-image"
				ev.ClusterTemplate.ExternalNetworkID = "private" // not external
				ev.Cluster.FixedNetwork = "twice"
				ev.Cluster.FixedSubnet = "nope"
			},
			[]v1alpha1.FieldError{
				{Field: "cluster_template.image_id", Message: "could not be found"},
				{Field: "cluster_template.external_network_id", Message: "Unable to find external network private."},
				{Field: "cluster.fixed_network", Message: "Multiple networks exist with same name 'twice'. Please use the network ID instead."},
				{Field: "cluster.fixed_subnet", Message: "Unable to find fixed subnet nope."},
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ev := f.event()
			tc.change(ev)
			orig := ev.Resolved
			err := openstack.NewResolver(f.cloud, openstack.ResolverOptions{}).Resolve(t.Context(), ev)
			if !errors.Is(err, v1alpha1.ErrInvalidInput) {
				t.Fatalf("error %v, want an input error", err)
			}
			got := v1alpha1.FieldErrors(err)
			if len(got) != len(tc.want) {
				t.Fatalf("errors:\n%v\nwant %d", err, len(tc.want))
			}
			for i, w := range tc.want {
				if got[i].Field != w.Field || !strings.Contains(got[i].Message, w.Message) {
					t.Errorf("error %d = %s: %s, want %s: …%s…", i, got[i].Field, got[i].Message, w.Field, w.Message)
				}
			}
			if diff := cmp.Diff(orig, ev.Resolved); diff != "" {
				t.Errorf("a failed Resolve changed the event (-want +got):\n%s", diff)
			}
		})
	}
}

func TestResolveServiceFailureIsRetryable(t *testing.T) {
	f := newResolverFixture(t)
	r := openstack.NewResolver(f.cloud, openstack.ResolverOptions{})
	ev := f.event()
	f.neutron.Fail.Store(true)
	err := r.Resolve(t.Context(), ev)
	if err == nil || errors.Is(err, v1alpha1.ErrInvalidInput) || !strings.Contains(err.Error(), "500") {
		t.Fatalf("error %v, want a retryable 500", err)
	}
	if ev.Resolved.Image != nil || ev.Resolved.VolumeTypes != nil {
		t.Fatalf("a failed Resolve changed the event: %s", dump(ev.Resolved))
	}
	// The failure is not cached: once Neutron recovers, the same resolver succeeds.
	f.neutron.Fail.Store(false)
	if err := r.Resolve(t.Context(), ev); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(f.fullyResolved(), ev.Resolved); diff != "" {
		t.Fatalf("resolved (-want +got):\n%s", diff)
	}
}

func TestResolveLeavesDeletesAlone(t *testing.T) {
	// No OpenStack is needed: a delete renders no values.
	ev := &v1alpha1.ClusterEvent{Operation: v1alpha1.DeleteCluster,
		ClusterTemplate: v1alpha1.ClusterTemplate{ImageID: "gone"}}
	if err := openstack.NewResolver(&openstack.Cloud{}, openstack.ResolverOptions{}).Resolve(t.Context(), ev); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(v1alpha1.Resolved{}, ev.Resolved); diff != "" {
		t.Fatalf("resolved (-want +got):\n%s", diff)
	}
}

// snapshot counts the requests so far to each service.
func (f *resolverFixture) snapshot() map[string]int {
	nu, _ := url.Parse(f.neutron.URL)
	cu, _ := url.Parse(f.cinder.URL)
	vu, _ := url.Parse(f.nova.URL)
	ku, _ := url.Parse(f.ks.AuthURL)
	return map[string]int{"glance": f.glanceRequests(), "neutron": f.counter.hostCount(nu.Host),
		"cinder": f.counter.hostCount(cu.Host), "nova": f.counter.hostCount(vu.Host), "keystone": f.counter.hostCount(ku.Host)}
}

func diff(after, before map[string]int) map[string]int {
	out := map[string]int{}
	for k, v := range after {
		out[k] = v - before[k]
	}
	return out
}

func TestResolveBurstCostsOneLookupEach(t *testing.T) {
	f := newResolverFixture(t)

	// One event on a fresh resolver: the cost of resolving once.
	before := f.snapshot()
	if err := openstack.NewResolver(f.cloud, openstack.ResolverOptions{}).Resolve(t.Context(), f.event()); err != nil {
		t.Fatal(err)
	}
	single := diff(f.snapshot(), before)
	// Glance and Neutron: version discovery, then one call per name; Cinder and Nova: one
	// list each (their catalog URLs carry the version); Keystone: none, the catalog is the
	// token's.
	want := map[string]int{"glance": 2, "neutron": 4, "cinder": 1, "nova": 1, "keystone": 0}
	if d := cmp.Diff(want, single); d != "" {
		t.Fatalf("one event's cost (-want +got):\n%s", d)
	}

	// A burst of 100 events for the project, at once, on another fresh resolver.
	r := openstack.NewResolver(f.cloud, openstack.ResolverOptions{})
	before = f.snapshot()
	var wg sync.WaitGroup
	errs := make([]error, 100)
	events := make([]*v1alpha1.ClusterEvent, 100)
	for i := range events {
		events[i] = f.event()
		wg.Go(func() { errs[i] = r.Resolve(t.Context(), events[i]) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(single, diff(f.snapshot(), before)); d != "" {
		t.Fatalf("100 events' cost, want what one costs (-want +got):\n%s", d)
	}
	for i, ev := range events {
		if d := cmp.Diff(f.fullyResolved(), ev.Resolved); d != "" {
			t.Fatalf("event %d resolved (-want +got):\n%s", i, d)
		}
	}
	// Events share the cache, not its slices and maps.
	events[0].Resolved.VolumeTypes[0] = "changed"
	events[0].Resolved.Networks["public"] = "changed"
	if events[1].Resolved.VolumeTypes[0] != "__DEFAULT__" || events[1].Resolved.Networks["public"] != publicNetID {
		t.Fatal("events share the cached slices or maps")
	}
}

func TestResolveCacheExpires(t *testing.T) {
	f := newResolverFixture(t)
	var mu sync.Mutex
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	r := openstack.NewResolver(f.cloud, openstack.ResolverOptions{CacheTTL: 30 * time.Second, Now: clock})

	steps := []struct {
		name       string
		advance    time.Duration
		wantCinder int // list calls in this step
	}{
		{"first event looks up", 0, 1},
		{"within the TTL: cached", 29 * time.Second, 0},
		{"after the TTL: looked up again", 2 * time.Second, 1},
		{"cached again", 10 * time.Second, 0},
	}
	for _, s := range steps {
		advance(s.advance)
		before := f.cinder.Count("/v3/")
		if err := r.Resolve(t.Context(), f.event()); err != nil {
			t.Fatal(err)
		}
		if got := f.cinder.Count("/v3/") - before; got != s.wantCinder {
			t.Errorf("%s: %d Cinder calls, want %d", s.name, got, s.wantCinder)
		}
	}
}

func dump(r v1alpha1.Resolved) string {
	var b strings.Builder
	if r.Image != nil {
		b.WriteString("image: " + r.Image.ID + " " + r.Image.KubeVersion + " " + r.Image.OSDistro + "\n")
	}
	for _, kv := range []struct {
		k string
		v any
	}{{"networks", r.Networks}, {"subnets", r.Subnets}, {"volume_types", r.VolumeTypes}, {"flavors", r.Flavors},
		{"keystone", r.KeystonePublicURL}, {"region", r.RegionName}} {
		b.WriteString(kv.k + ": " + strings.TrimSpace(strings.ReplaceAll(fmt.Sprintf("%v", kv.v), "\n", " ")) + "\n")
	}
	return b.String()
}

// TestResolveUpgradeImages: an upgrade_cluster that names no upgrade images gets them from
// the real Glance: the newest image of each Kubernetes minor and distribution, only
// releases (a suffixed version is left out); other operations, and an upgrade that names
// its own (even none), are left alone.
func TestResolveUpgradeImages(t *testing.T) {
	f := newResolverFixture(t)
	distro := "chain-" + strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-"))
	public := func() *images.ImageVisibility { v := images.ImageVisibilityPublic; return &v }
	img := func(kube string) string {
		id := f.glance.CreateImage(t, images.CreateOpts{Name: distro + "-" + kube, Visibility: public(),
			Properties: map[string]string{"kube_version": kube, "os_distro": distro}}).ID
		f.glance.Upload(t, id, []byte("not a disk"))
		return id
	}
	img("v1.34.2")
	// Never uploaded: queued, not offered.
	f.glance.CreateImage(t, images.CreateOpts{Name: distro + "-queued", Visibility: public(),
		Properties: map[string]string{"kube_version": "v1.34.9", "os_distro": distro}})
	newest134, only135 := img("v1.34.5"), img("v1.35.0")
	img("v1.36.1+k3s1")
	want := []v1alpha1.Image{{ID: newest134, KubeVersion: "v1.34.5", OSDistro: distro}, {ID: only135, KubeVersion: "v1.35.0", OSDistro: distro}}

	for _, tc := range []struct {
		name  string
		op    v1alpha1.Operation
		given []v1alpha1.Image
		want  []v1alpha1.Image
	}{
		{"an upgrade naming none", v1alpha1.UpgradeCluster, nil, want},
		{"an upgrade naming its own", v1alpha1.UpgradeCluster, []v1alpha1.Image{}, []v1alpha1.Image{}},
		{"a resize", v1alpha1.ResizeCluster, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := f.event()
			ev.Operation, ev.Resolved.UpgradeImages = tc.op, tc.given
			if err := openstack.NewResolver(f.cloud, openstack.ResolverOptions{}).Resolve(t.Context(), ev); err != nil {
				t.Fatal(err)
			}
			got := ev.Resolved.UpgradeImages
			if len(tc.want) > 0 {
				// Glance is shared by the test binary: other tests' images are there too.
				var mine []v1alpha1.Image
				for _, i := range got {
					if i.OSDistro == distro {
						mine = append(mine, i)
					}
				}
				got = mine
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("upgrade_images (-want +got):\n%s", diff)
			}
		})
	}
}
