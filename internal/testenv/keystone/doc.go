// Package keystone runs a real OpenStack Keystone for tests: Debian's python3-keystone
// (Zed), configured in a temporary directory with sqlite and fernet tokens, served on a
// free 127.0.0.1 port by keystone-wsgi-public. Tests authenticate against it with
// gophercloud exactly as production code does.
//
// Setting Keystone up takes 15–20 s on two shared cores (each keystone-manage run spends
// seconds importing Keystone), so Start shares one instance per test binary; call Main from TestMain to stop it when the tests end. Tests isolate themselves
// with their own region (NewRegion), projects and users.
//
// Services that cannot run here get stand-ins (net/http/httptest servers built from the
// documented API) that are registered in the real catalog with RegisterService and check
// every token against Keystone (RequireToken), so clients discover and authenticate to
// them exactly as in production. StartGlance runs the real Glance API (python3-glance,
// sqlite, file store) behind Keystone's authtoken middleware.
//
// Without keystone-manage the tests skip with one line; under CI they fail instead, because
// CI must run them (it installs python3-keystone and python3-glance).
package keystone
