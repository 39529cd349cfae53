package forge

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/magnum-gitops/magnum-gitops/gitrepo"
)

// pullNumber reads the number of a pull request of owner/repo from its web URL, which ends
// in /{owner}/{repo}/{kind}/{number}: kind is "pulls" on Gitea, "pull" on GitHub. Owner and
// repository compare without case, as both forges name them. The host is not compared: a
// forge's web and API addresses may differ (GitHub's always do; a Gitea behind a proxy
// has a ROOT_URL other than the address serve reaches it at).
func pullNumber(raw, owner, repo, kind string) (int, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return 0, fmt.Errorf("%w: %q is not an http(s) URL", gitrepo.ErrNotPullRequestURL, gitrepo.Sanitize(raw))
	}
	seg := strings.Split(strings.Trim(u.Path, "/"), "/")
	if len(seg) >= 4 {
		seg = seg[len(seg)-4:]
		n, err := strconv.Atoi(seg[3])
		if err == nil && n > 0 && strings.EqualFold(seg[0], owner) && strings.EqualFold(seg[1], repo) && seg[2] == kind {
			return n, nil
		}
	}
	return 0, fmt.Errorf("%w: %s is not .../%s/%s/%s/NUMBER", gitrepo.ErrNotPullRequestURL, u.Redacted(), owner, repo, kind)
}
