package keystone

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
)

// keystoneConf is the whole configuration: everything lives in one temporary directory.
const keystoneConf = `[DEFAULT]
log_file = %[1]s/keystone.log
[database]
connection = sqlite:///%[1]s/keystone.db
[identity]
# bcrypt's cheapest cost: every test user is hashed once and verified at each login.
password_hash_rounds = 4
[token]
provider = fernet
[fernet_tokens]
key_repository = %[1]s/fernet-keys
[fernet_receipts]
key_repository = %[1]s/fernet-keys
[credential]
key_repository = %[1]s/credential-keys
`

// sqliteFixups makes Keystone's sqlite database behave like the MySQL one deployments use:
//
//   - With the default rollback journal, Keystone answered 500 "database is locked" to the
//     first write after POST /v3/regions (a connection still held a read lock). Write-ahead
//     logging lets readers and the writer proceed together.
//   - Deleting a user bulk-deletes its application credentials and relies on ON DELETE
//     CASCADE for their role rows, which sqlite ignores unless each connection enables
//     foreign keys (Keystone does not). sqlite then reuses the freed internal ids, and the
//     next credential collides with the orphans: 409 "Duplicate entry". Triggers do the
//     cascade.
const sqliteFixups = `import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.execute("PRAGMA journal_mode=WAL").fetchall()
for table in ("application_credential_role", "application_credential_access_rule"):
    db.execute("CREATE TRIGGER cascade_" + table + " AFTER DELETE ON application_credential "
               "BEGIN DELETE FROM " + table + " WHERE application_credential_id = OLD.internal_id; END")
db.commit()
`

// start sets Keystone up in a new temporary directory and serves it.
func start(ctx context.Context) (*Keystone, error) {
	manage, err := keystoneManage()
	if err != nil {
		return nil, err
	}
	wsgi := filepath.Join(filepath.Dir(manage), "keystone-wsgi-public")
	if _, err := os.Stat(wsgi); err != nil {
		return nil, fmt.Errorf("keystone: %s missing next to keystone-manage: %w", wsgi, err)
	}
	dir, err := os.MkdirTemp("", "keystone-test-")
	if err != nil {
		return nil, err
	}
	ks, err := setUp(ctx, manage, wsgi, dir)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return ks, nil
}

func setUp(ctx context.Context, manage, wsgi, dir string) (*Keystone, error) {
	for _, d := range []string{"fernet-keys", "credential-keys"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o700); err != nil {
			return nil, err
		}
	}
	conf := filepath.Join(dir, "keystone.conf")
	if err := os.WriteFile(conf, fmt.Appendf(nil, keystoneConf, dir), 0o600); err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	ks := &Keystone{
		AuthURL:       fmt.Sprintf("http://127.0.0.1:%d/v3", port),
		Region:        "RegionOne",
		AdminUser:     "admin",
		AdminPassword: randomHex(16),
		AdminProject:  "admin",
		DomainID:      "default",
	}
	manageStep := func(step string, args ...string) func() error {
		return func() error {
			return run(ctx, "keystone-manage "+step, dir, manage,
				append([]string{"--config-file", conf, step}, args...)...)
		}
	}
	owner := owner()
	// Each keystone-manage run spends seconds importing Keystone; the key repositories and
	// the schema are independent, so they are made at the same time.
	if err := parallel(
		manageStep("fernet_setup", owner...),
		manageStep("credential_setup", owner...),
		manageStep("db_sync"),
	); err != nil {
		return nil, err
	}
	if err := run(ctx, "sqlite fix-ups", dir, python, "-c", sqliteFixups,
		filepath.Join(dir, "keystone.db")); err != nil {
		return nil, err
	}
	if err := manageStep("bootstrap",
		"--bootstrap-username", ks.AdminUser,
		"--bootstrap-password", ks.AdminPassword,
		"--bootstrap-project-name", ks.AdminProject,
		"--bootstrap-admin-url", ks.AuthURL,
		"--bootstrap-public-url", ks.AuthURL,
		"--bootstrap-internal-url", ks.AuthURL,
		"--bootstrap-region-id", ks.Region)(); err != nil {
		return nil, err
	}
	cmd := exec.Command(wsgi, "--host", "127.0.0.1", "--port", fmt.Sprint(port))
	cmd.Dir = dir
	// The WSGI app finds keystone.conf through this variable.
	cmd.Env = append(os.Environ(), "OS_KEYSTONE_CONFIG_DIR="+dir)
	proc, err := launch("keystone", dir, cmd, filepath.Join(dir, "keystone.log"))
	if err != nil {
		return nil, err
	}
	ks.proc = proc
	if err := proc.waitHTTP(ks.AuthURL, 200); err != nil {
		_ = proc.stop()
		return nil, err
	}
	return ks, nil
}

// owner names the key repositories' owner: the user running the tests, root or not.
func owner() []string {
	u, err := user.Current()
	if err != nil {
		return []string{"--keystone-user", "root", "--keystone-group", "root"}
	}
	group := u.Gid
	if g, err := user.LookupGroupId(u.Gid); err == nil {
		group = g.Name
	}
	return []string{"--keystone-user", u.Username, "--keystone-group", group}
}
