package reconciler

// What the package's external tests (package reconciler_test) use of its unexported names:
// the repository's contract (file names, trailers) and the rules they check.
const (
	RecordFile           = recordFile
	SOPSConfigFile       = sopsConfigFile
	TrailerEventID       = trailerEventID
	TrailerOperation     = trailerOperation
	TrailerUpgradeTarget = trailerUpgradeTarget
	OperationUpgradeStep = operationUpgradeStep
)

var (
	Digest               = eventDigest
	Record               = encodeRecord
	NewClusters          = newClusters
	SecretsRemoval       = secretsRemoval
	ErrSymlink           = errSymlink
	ErrUpgradeInProgress = errUpgradeInProgress
)
