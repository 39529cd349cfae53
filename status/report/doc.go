// Package report sends status judgements where they are read: to the Magnum API (the health
// fields and autoscaled node counts an outside service may PATCH, through gophercloud). The
// service serves the rest (GET /v1/clusters/{uuid}/status, for the Magnum-side driver shim
// that copies status, api_address and coe_version) through a Lookup.
package report
