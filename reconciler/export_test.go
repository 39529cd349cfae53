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

// Error is the type of a step's failure, which tests take apart with errors.As.
type Error = failure

var (
	LoadLedger           = loadLedger
	KindOf               = kindOf
	Digest               = eventDigest
	Record               = encodeRecord
	NewClusters          = newClusters
	SecretsRemoval       = secretsRemoval
	ErrSymlink           = errSymlink
	ErrUpgradeInProgress = errUpgradeInProgress
)

// Lookup is the answer r's ledger holds for an event id (ReadHistory sets the ledger).
func (r *Reconciler) Lookup(id, digest string) (Summary, bool, error) {
	return r.ledger.Lookup(id, digest)
}
