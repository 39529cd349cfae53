package serveload

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"
)

// Options shape the load.
type Options struct {
	// Clients post at the same time; each posts Events events, one after the other, to its
	// Clusters clusters in turn.
	Clients, Events, Clusters int
	// Offset numbers the clients' clusters from Clients*Clusters*Offset, so that a second
	// load on the same serve has clusters of its own.
	Offset int
}

// Target is the serve under load.
type Target struct {
	// URL is the API's base URL (http://host:port); Token a bearer token it accepts.
	URL, Token string
}

// Result is what one load measured.
type Result struct {
	Events   int
	Took     time.Duration
	P50, P99 time.Duration
}

// Rate is the events answered per second.
func (r Result) Rate() float64 { return float64(r.Events) / r.Took.Seconds() }

// ErrOptions is the answer to Options with a count that is not positive.
var ErrOptions = errors.New("serveload: Clients, Events and Clusters must be positive")

// Load runs the clients against t and times them from the first request to the last
// answer. The bodies are made before the clock starts, so the clients' own work does not
// compete with serve's; each client keeps its connection, as the driver shim's
// requests.Session does. Every answer must be 200.
func Load(ctx context.Context, t Target, o Options) (Result, error) {
	if o.Clients < 1 || o.Events < 1 || o.Clusters < 1 {
		return Result{}, ErrOptions
	}
	bodies := make([][][]byte, o.Clients)
	for c := range bodies {
		first := (o.Offset*o.Clients + c) * o.Clusters
		for k := range o.Events {
			b, err := EventBody(o.Offset*o.Clients+c, first+k%o.Clusters, k)
			if err != nil {
				return Result{}, err
			}
			bodies[c] = append(bodies[c], b)
		}
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = o.Clients
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 5 * time.Minute}
	lat := make([][]time.Duration, o.Clients)
	errs := make([]error, o.Clients)
	var wg sync.WaitGroup
	start := time.Now()
	for c := range o.Clients {
		wg.Go(func() {
			for _, body := range bodies[c] {
				t0 := time.Now()
				if err := post(ctx, client, t, body); err != nil {
					errs[c] = err
					return
				}
				lat[c] = append(lat[c], time.Since(t0))
			}
		})
	}
	wg.Wait()
	took := time.Since(start)
	if err := errors.Join(errs...); err != nil {
		return Result{}, err
	}
	all := slices.Concat(lat...)
	slices.Sort(all)
	return Result{Events: len(all), Took: took, P50: all[len(all)/2], P99: all[len(all)*99/100]}, nil
}

// post sends one event and wants 200.
func post(ctx context.Context, client *http.Client, t Target, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.URL+"/v1/events", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+t.Token)
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(resp.Body) // read whole, so the connection is kept
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("POST /v1/events: %s: %s", resp.Status, bytes.TrimSpace(answer))
	}
	return nil
}
