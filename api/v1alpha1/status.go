package v1alpha1

import "strings"

// ClusterStatus is a Magnum cluster or node group status (magnum/objects/fields.py
// ClusterStatus): an action and its outcome, e.g. CREATE_IN_PROGRESS. Build one with
// StatusOf rather than by joining strings.
type ClusterStatus string

// Action is the first half of a ClusterStatus.
type Action string

// Outcome is the second half of a ClusterStatus.
type Outcome string

// The actions and outcomes magnum-gitops reads and writes. Magnum has more actions
// (ROLLBACK, RESUME, …) that only Heat drivers used; they parse, but nothing produces them.
const (
	ActionCreate Action = "CREATE"
	ActionUpdate Action = "UPDATE"
	ActionDelete Action = "DELETE"

	InProgress Outcome = "IN_PROGRESS"
	Complete   Outcome = "COMPLETE"
	Failed     Outcome = "FAILED"
)

// The statuses of the three actions.
const (
	CreateInProgress ClusterStatus = "CREATE_IN_PROGRESS"
	CreateComplete   ClusterStatus = "CREATE_COMPLETE"
	CreateFailed     ClusterStatus = "CREATE_FAILED"
	UpdateInProgress ClusterStatus = "UPDATE_IN_PROGRESS"
	UpdateComplete   ClusterStatus = "UPDATE_COMPLETE"
	UpdateFailed     ClusterStatus = "UPDATE_FAILED"
	DeleteInProgress ClusterStatus = "DELETE_IN_PROGRESS"
	DeleteComplete   ClusterStatus = "DELETE_COMPLETE"
	DeleteFailed     ClusterStatus = "DELETE_FAILED"
)

// StatusOf is the status of an action with an outcome.
func StatusOf(a Action, o Outcome) ClusterStatus { return ClusterStatus(string(a) + "_" + string(o)) }

// Action is the status's action ("" for an empty or malformed status).
func (s ClusterStatus) Action() Action {
	a, _ := s.split()
	return a
}

// Outcome is the status's outcome ("" for an empty or malformed status).
func (s ClusterStatus) Outcome() Outcome {
	_, o := s.split()
	return o
}

// split cuts at the first "_": the actions are single words, the outcomes may hold "_".
func (s ClusterStatus) split() (Action, Outcome) {
	a, o, ok := strings.Cut(string(s), "_")
	if !ok {
		return "", ""
	}
	return Action(a), Outcome(o)
}

// InProgressStatus is the status Magnum gives a cluster while the operation runs: the
// conductor sets it before it calls the driver.
func (o Operation) InProgressStatus() ClusterStatus {
	switch o {
	case CreateCluster:
		return CreateInProgress
	case DeleteCluster:
		return DeleteInProgress
	}
	return UpdateInProgress
}

// HealthStatus is a Magnum cluster health status.
type HealthStatus string

// The health statuses Magnum knows.
const (
	Healthy   HealthStatus = "HEALTHY"
	Unhealthy HealthStatus = "UNHEALTHY"
	// UnknownHealth is reported when the management cluster cannot be read; it is never
	// written to Magnum, which keeps its last known health instead.
	UnknownHealth HealthStatus = "UNKNOWN"
)
