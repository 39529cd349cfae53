package status

// ArgoMessage exposes argoMessage to the external tests.
var ArgoMessage = argoMessage
