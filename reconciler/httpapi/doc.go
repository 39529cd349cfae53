// Package httpapi is the service's HTTP event source and read API:
//
//	POST /v1/events                  a ClusterEvent (JSON or YAML), answered once pushed
//	GET  /v1/clusters/{uuid}         the last event, its commit, whether Flux applied it
//	GET  /v1/clusters/{uuid}/status  the Magnum status judged from the management cluster
//	GET  /version                    the build and the event API versions it accepts
//
// Every /v1 route needs a bearer token (compared in constant time) or, where the server
// asks for client certificates, a verified one; /version needs none. Every answer names
// the release in the Magnum-Gitops-Version header. Errors are JSON objects
// {"error": {"code", "message", "fields"?, "paths"?}} with the HTTP status a client acts
// on: 4xx are final, 5xx may be retried with the same event id.
package httpapi
