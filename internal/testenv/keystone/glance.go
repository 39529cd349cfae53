package keystone

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/projects"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/roles"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/users"
	"github.com/gophercloud/gophercloud/v2/openstack/image/v2/imagedata"
	"github.com/gophercloud/gophercloud/v2/openstack/image/v2/images"
)

// ErrGlanceNotInstalled reports that Debian's python3-glance is missing.
var ErrGlanceNotInstalled = errors.New("keystone: glance is not importable by /usr/bin/python3 " +
	"(apt-get install -y --no-install-recommends python3-glance)")

// python is Debian's interpreter, which has Debian's OpenStack modules.
const python = "/usr/bin/python3"

// Glance is the real Glance image API (python3-glance, Zed) behind Keystone's authtoken
// middleware, with sqlite and a file store in a temporary directory.
type Glance struct {
	// URL is the unversioned endpoint, as deployments register it in the catalog.
	URL  string
	ks   *Keystone
	proc *process
}

// glancePaste is the keystone pipeline of Glance's own api-paste.ini, minus the middleware
// tests do not need (CORS, health check, profiler, proxy headers).
const glancePaste = `[pipeline:glance-api-keystone]
pipeline = versionnegotiation authtoken context rootapp

[composite:rootapp]
paste.composite_factory = glance.api:root_app_factory
/: apiversions
/v2: apiv2app

[app:apiversions]
paste.app_factory = glance.api.versions:create_resource

[app:apiv2app]
paste.app_factory = glance.api.v2.router:API.factory

[filter:versionnegotiation]
paste.filter_factory = glance.api.middleware.version_negotiation:VersionNegotiationFilter.factory

[filter:context]
paste.filter_factory = glance.api.middleware.context:ContextMiddleware.factory

[filter:authtoken]
paste.filter_factory = keystonemiddleware.auth_token:filter_factory
delay_auth_decision = true
`

// glanceConf: one process (workers = 0), sqlite, the file store, and keystonemiddleware
// validating tokens against the test Keystone as the service user.
const glanceConf = `[DEFAULT]
bind_host = 127.0.0.1
bind_port = %[2]d
workers = 0
log_file = %[1]s/glance-api.log
enabled_backends = fs:file
[database]
connection = sqlite:///%[1]s/glance.db
[glance_store]
default_backend = fs
[fs]
filesystem_store_datadir = %[1]s/images
[os_glance_staging_store]
filesystem_store_datadir = %[1]s/staging
[os_glance_tasks_store]
filesystem_store_datadir = %[1]s/tasks
[paste_deploy]
flavor = keystone
config_file = %[1]s/glance-api-paste.ini
[keystone_authtoken]
www_authenticate_uri = %[3]s
auth_url = %[3]s
auth_type = password
username = %[4]s
password = %[5]s
project_name = service
user_domain_id = default
project_domain_id = default
`

// StartGlance returns this Keystone's Glance, starting it on first use (5–10 s on two
// shared cores); it stops with the Keystone. It skips the test when python3-glance is missing,
// and fails it instead when CI is set.
func (k *Keystone) StartGlance(t testing.TB) *Glance {
	t.Helper()
	k.glanceOnce.Do(func() { k.glance, k.glanceErr = k.startGlance(context.Background()) })
	switch err := k.glanceErr; {
	case err == nil:
	case os.Getenv("CI") != "":
		t.Fatalf("CI is set and Glance is unavailable: %v", err)
	case errors.Is(err, ErrGlanceNotInstalled):
		t.Skip(err)
	default:
		t.Fatal(err)
	}
	return k.glance
}

func (k *Keystone) startGlance(ctx context.Context) (*Glance, error) {
	if err := exec.Command(python, "-c",
		"import glance.cmd.api, glance.cmd.manage, keystonemiddleware.auth_token").Run(); err != nil {
		return nil, ErrGlanceNotInstalled
	}
	user, password, err := k.serviceUser(ctx, "glance")
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "glance-test-")
	if err != nil {
		return nil, err
	}
	g, err := k.setUpGlance(ctx, dir, user, password)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return g, nil
}

func (k *Keystone) setUpGlance(ctx context.Context, dir, user, password string) (*Glance, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	conf := filepath.Join(dir, "glance-api.conf")
	if err := os.WriteFile(filepath.Join(dir, "glance-api-paste.ini"), []byte(glancePaste), 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(conf, fmt.Appendf(nil, glanceConf, dir, port, k.AuthURL, user, password), 0o600); err != nil {
		return nil, err
	}
	// Debian ships the glance-manage and glance-api scripts in packages that need debconf;
	// their entry points are plain functions of python3-glance.
	entry := func(module string) string {
		return "import sys; from glance.cmd." + module + " import main; sys.exit(main())"
	}
	if err := run(ctx, "glance-manage db_sync", dir, python, "-c", entry("manage"),
		"--config-file", conf, "db_sync"); err != nil {
		return nil, err
	}
	cmd := exec.Command(python, "-c", entry("api"), "--config-file", conf)
	cmd.Dir = dir
	proc, err := launch("glance-api", dir, cmd, filepath.Join(dir, "glance-api.log"))
	if err != nil {
		return nil, err
	}
	g := &Glance{URL: fmt.Sprintf("http://127.0.0.1:%d", port), ks: k, proc: proc}
	// The version document answers 300 Multiple Choices.
	if err := proc.waitHTTP(g.URL+"/", 300); err != nil {
		_ = proc.stop()
		return nil, err
	}
	return g, nil
}

// serviceUser creates a user with the admin role on the "service" project, as deployments
// do for each service's authtoken middleware. It lives as long as the Keystone.
func (k *Keystone) serviceUser(ctx context.Context, service string) (name, password string, err error) {
	idc, err := k.adminIdentity(ctx)
	if err != nil {
		return "", "", err
	}
	projectID, err := k.serviceProject(ctx, idc)
	if err != nil {
		return "", "", err
	}
	name, password = service+"-"+randomHex(4), randomHex(16)
	u, err := users.Create(ctx, idc, users.CreateOpts{Name: name, DomainID: k.DomainID, Password: password}).Extract()
	if err != nil {
		return "", "", fmt.Errorf("keystone: creating service user %s: %w", name, err)
	}
	roleID, err := k.roleID(ctx, idc, "admin")
	if err != nil {
		return "", "", err
	}
	if err := roles.Assign(ctx, idc, roleID, roles.AssignOpts{UserID: u.ID, ProjectID: projectID}).ExtractErr(); err != nil {
		return "", "", fmt.Errorf("keystone: giving %s the admin role: %w", name, err)
	}
	return name, password, nil
}

// serviceProject returns the id of the project "service", creating it on first use.
func (k *Keystone) serviceProject(ctx context.Context, idc *gophercloud.ServiceClient) (string, error) {
	pages, err := projects.List(idc, projects.ListOpts{Name: "service", DomainID: k.DomainID}).AllPages(ctx)
	if err != nil {
		return "", fmt.Errorf("keystone: listing projects: %w", err)
	}
	ps, err := projects.ExtractProjects(pages)
	if err != nil {
		return "", err
	}
	if len(ps) > 0 {
		return ps[0].ID, nil
	}
	p, err := projects.Create(ctx, idc, projects.CreateOpts{Name: "service", DomainID: k.DomainID}).Extract()
	if err != nil {
		return "", fmt.Errorf("keystone: creating project service: %w", err)
	}
	return p.ID, nil
}

// Register adds Glance to region's catalog as service type "image" until the test ends.
func (g *Glance) Register(t testing.TB, region string) {
	t.Helper()
	g.ks.RegisterService(t, region, "image", "glance", g.URL)
}

// CreateImage creates an image record (no data) as the admin and deletes it when the test
// ends. Extra properties such as kube_version and os_distro go in opts.Properties.
func (g *Glance) CreateImage(t testing.TB, opts images.CreateOpts) *images.Image {
	t.Helper()
	ctx, cancel, client := g.adminCall(t)
	defer cancel()
	if opts.ContainerFormat == "" {
		opts.ContainerFormat, opts.DiskFormat = "bare", "qcow2"
	}
	img, err := images.Create(ctx, client, opts).Extract()
	if err != nil {
		t.Fatalf("glance: creating image %s: %v", opts.Name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
		defer cancel()
		if err := images.Delete(ctx, client, img.ID).ExtractErr(); err != nil && !gophercloud.ResponseCodeIs(err, 404) {
			t.Errorf("glance: deleting image %s: %v", img.ID, err)
		}
	})
	return img
}

// Upload uploads data to an image as the admin, which makes it active, as the images a
// cloud offers are.
func (g *Glance) Upload(t testing.TB, id string, data []byte) {
	t.Helper()
	ctx, cancel, client := g.adminCall(t)
	defer cancel()
	if err := imagedata.Upload(ctx, client, id, bytes.NewReader(data)).ExtractErr(); err != nil {
		t.Fatalf("glance: uploading image %s: %v", id, err)
	}
}

// adminCall gives one call as the admin its client and a context bounded by callTimeout.
func (g *Glance) adminCall(t testing.TB) (context.Context, context.CancelFunc, *gophercloud.ServiceClient) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	client, err := g.adminClient(ctx)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	return ctx, cancel, client
}

// adminClient is an image v2 client for the admin, pointed at Glance directly: the test
// regions it is registered in come and go.
func (g *Glance) adminClient(ctx context.Context) (*gophercloud.ServiceClient, error) {
	pc, err := g.ks.adminProvider(ctx)
	if err != nil {
		return nil, err
	}
	return &gophercloud.ServiceClient{ProviderClient: pc, Endpoint: g.URL + "/", ResourceBase: g.URL + "/v2/", Type: "image"}, nil
}

// Log returns the tail of Glance's logs, for failure messages.
func (g *Glance) Log() string { return g.proc.logTail() }
