package gitea

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"
)

// iniConfig is what varies between two test servers' app.ini.
type iniConfig struct {
	// Root: the tests run as root, which Gitea refuses unless told it is on purpose.
	Root bool
	// WorkPath holds options/ (translations) and data/ (sqlite, repositories).
	WorkPath string
	// Port is the loopback port the web server listens on.
	Port int
	// LogDir receives gitea.log.
	LogDir string
}

// appINI renders the app.ini of a test server. The secrets Gitea would otherwise generate
// and write back into the file are given, so the CLI and the web server never race to
// rewrite it; webhooks may reach loopback, where the tests listen; nothing is fetched
// from the network (offline mode, no update checker, no mail).
func appINI(c iniConfig) string {
	var b strings.Builder
	if c.Root {
		// Gitea reads this key only at the top of the file.
		b.WriteString("I_AM_BEING_UNSAFE_RUNNING_AS_ROOT = true\n")
	}
	fmt.Fprintf(&b, `APP_NAME = magnum-gitops test
RUN_MODE = prod
WORK_PATH = %[1]s

[database]
DB_TYPE = sqlite3
PATH = %[1]s/data/gitea.db

[server]
PROTOCOL = http
HTTP_ADDR = 127.0.0.1
HTTP_PORT = %[2]d
ROOT_URL = http://127.0.0.1:%[2]d/
LOCAL_ROOT_URL = http://127.0.0.1:%[2]d/
DISABLE_SSH = true
START_SSH_SERVER = false
OFFLINE_MODE = true
LFS_START_SERVER = false
LFS_JWT_SECRET = %[3]s

[repository]
ROOT = %[1]s/data/repositories
DEFAULT_BRANCH = main

[security]
INSTALL_LOCK = true
SECRET_KEY = %[4]s
INTERNAL_TOKEN = %[5]s

[oauth2]
JWT_SECRET = %[6]s

[service]
DISABLE_REGISTRATION = true

[webhook]
ALLOWED_HOST_LIST = loopback
SKIP_TLS_VERIFY = true
DELIVER_TIMEOUT = 10

[indexer]
ISSUE_INDEXER_TYPE = db

[queue]
TYPE = channel

[session]
PROVIDER = memory

[cache]
ADAPTER = memory

[mailer]
ENABLED = false

[actions]
ENABLED = false

[cron.update_checker]
ENABLED = false

[log]
MODE = file
LEVEL = Warn
ROOT_PATH = %[7]s
`, c.WorkPath, c.Port, jwtSecret(), randomHex(32), randomHex(32), jwtSecret(), c.LogDir)
	return b.String()
}

// jwtSecret is a secret in the form Gitea checks JWT secrets against: 32 bytes, unpadded
// URL-safe base64.
func jwtSecret() string {
	return base64.RawURLEncoding.EncodeToString(randomBytes(32))
}

func randomHex(n int) string { return hex.EncodeToString(randomBytes(n)) }

func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return b
}
