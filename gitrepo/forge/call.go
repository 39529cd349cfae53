package forge

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/magnum-gitops/magnum-gitops/gitrepo"
)

// forgeCall is one JSON request to a forge's REST API.
type forgeCall struct {
	forge   string // names the forge in errors
	client  *http.Client
	method  string
	url     string
	headers map[string]string
	body    any // marshalled to JSON when not nil
}

// do sends the call and decodes a 2xx answer into out (when not nil). It returns the
// status and, for other answers, the first KiB of the body. Credentials are in headers
// only, so errors never quote them.
func (c forgeCall) do(ctx context.Context, out any) (int, []byte, error) {
	var rd io.Reader
	if c.body != nil {
		b, err := json.Marshal(c.body)
		if err != nil {
			return 0, nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, c.method, c.url, rd)
	if err != nil {
		return 0, nil, err
	}
	for k, v := range c.headers {
		req.Header.Set(k, v)
	}
	if c.body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	cl := c.client
	if cl == nil {
		cl = http.DefaultClient
	}
	resp, err := cl.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("%s: %w", c.forge, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
		return resp.StatusCode, nil, fmt.Errorf("%w: %s answered HTTP %d", gitrepo.ErrAuthentication, c.forge, resp.StatusCode)
	}
	if resp.StatusCode/100 != 2 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		return resp.StatusCode, b, nil
	}
	if out != nil {
		if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(out); err != nil {
			return resp.StatusCode, nil, fmt.Errorf("%s: decoding the answer: %w", c.forge, err)
		}
	}
	return resp.StatusCode, nil, nil
}
