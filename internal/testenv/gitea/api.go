package gitea

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"
)

// APIError is an answer of the API other than the one a helper expected.
type APIError struct {
	Method, Path string
	Status       int
	// Message is the start of the answer's body.
	Message string
}

// Error implements error.
func (e *APIError) Error() string {
	return fmt.Sprintf("gitea: %s %s: HTTP %d: %s", e.Method, e.Path, e.Status, e.Message)
}

// Call sends one request to the REST API as user, path relative to /api/v1, and decodes
// a 2xx answer into out (when not nil). Other answers are an *APIError; the token goes in
// a header and is never part of an error. It is the escape hatch for a test needing an
// endpoint the helpers do not wrap.
func (s *Server) Call(user User, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, s.URL+"/api/v1"+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "token "+user.Token)
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	c := http.Client{Timeout: 60 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 2048))
		return &APIError{Method: method, Path: path, Status: resp.StatusCode, Message: string(b)}
	}
	if out == nil {
		return nil
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

// must is Call, failing t on error.
func (s *Server) must(t testing.TB, user User, method, path string, body, out any) {
	t.Helper()
	if err := s.Call(user, method, path, body, out); err != nil {
		t.Fatal(err)
	}
}
