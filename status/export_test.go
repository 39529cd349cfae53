package status

// ArgoMessage exposes argoMessage to the external tests.
var ArgoMessage = argoMessage

// OneLine exposes oneLine to the external tests.
var OneLine = oneLine
