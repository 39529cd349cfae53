package serveload

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// ErrNotReady is the answer when serve does not answer ready, with its first resync
// done, in time.
var ErrNotReady = errors.New("serveload: serve is not ready")

// WaitReady waits until serve at url answers /readyz and its /metrics count a finished
// resync (the one at start, measured beside the load otherwise), or until within passes,
// ctx ends or exited yields (the process ended; nil when serve runs in-process and says
// so through ctx).
func WaitReady(ctx context.Context, url string, within time.Duration, exited <-chan error) error {
	deadline := time.Now().Add(within)
	for {
		err := ready(ctx, url)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w after %s: %w", ErrNotReady, within, err)
		}
		select {
		case err := <-exited:
			return fmt.Errorf("%w: serve exited: %v", ErrNotReady, err)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func ready(ctx context.Context, url string) error {
	if _, err := get(ctx, url+"/readyz"); err != nil {
		return err
	}
	metrics, err := get(ctx, url+"/metrics")
	if err != nil {
		return err
	}
	sc := bufio.NewScanner(strings.NewReader(metrics))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "magnum_gitops_resync_duration_seconds_count "); ok && v != "0" {
			return nil
		}
	}
	return errors.New("no resync finished yet")
}

func get(ctx context.Context, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var b strings.Builder
	if _, err := bufio.NewReader(resp.Body).WriteTo(&b); err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s: %s", url, resp.Status)
	}
	return b.String(), nil
}

// Metrics reads serve's /metrics as sample → value, a sample named with its labels as
// the exposition writes it (magnum_gitops_group_size_sum, name{label="v"}).
func Metrics(ctx context.Context, url string) (map[string]float64, error) {
	text, err := get(ctx, url+"/metrics")
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			out[line[:i]] = v
		}
	}
	return out, nil
}
