# magnum-gitops — run `make help` for the targets.
GO        ?= go
GOFLAGS   ?=
BIN       := bin/magnum-gitops
PKGS      := ./...
FUZZTIME  ?= 60s
BENCHTIME ?= 1s
# The first `make test` builds kube-apiserver from the Go module proxy (~10 min on 2 cores)
# and caches it; later runs reuse it.
TESTBIN_DIR = $(shell hack/testbin.sh 2>/dev/null | tail -n 1)
# One version for the binary, the image, the chart and the shim: the VERSION file. The date
# is the commit's, so that the same commit builds the same bytes.
VERSION   ?= $(shell cat VERSION)
COMMIT    ?= $(shell git rev-parse HEAD 2>/dev/null)
DATE      ?= $(shell git log -1 --format=%cI 2>/dev/null)
LDFLAGS_VERSION = -X github.com/magnum-gitops/magnum-gitops/internal/buildinfo.Version=$(VERSION) \
  -X github.com/magnum-gitops/magnum-gitops/internal/buildinfo.Commit=$(COMMIT) \
  -X github.com/magnum-gitops/magnum-gitops/internal/buildinfo.Date=$(DATE)

export GOTOOLCHAIN := local

.PHONY: help build test test-unit test-driver testbin flux capi gitea argocd e2e e2e-argocd e2e-argocd-capi e2e-argocd-scale e2e-magnum e2e-magnum-capi e2e-scale demo bench fuzz update-golden schemas vet lint fmt clean

help: ## Show this help
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z0-9_-]+:.*## / {printf "  %-14s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

build: ## Build bin/magnum-gitops
	$(GO) build -buildvcs=auto $(GOFLAGS) -ldflags '$(LDFLAGS_VERSION)' -o $(BIN) ./cmd/magnum-gitops # the revision: serve keeps its settled clusters under it

# The image, without a container daemon (docs/image.md): a static binary per platform, then
# hack/ociimage writes an OCI layout (one index, a manifest per platform) on an empty base
# with Debian's CA certificates, and prints the index digest. Every date is the commit's:
# the same commit gives the same digest. The Dockerfile builds the same files with Docker.
IMAGE_NAME      ?= ghcr.io/magnum-gitops/magnum-gitops
IMAGE_PLATFORMS ?= linux/amd64 linux/arm64
IMAGE_BIN_DIR   ?= bin/image
IMAGE_OUT       ?= bin/image/oci
CA_CERTIFICATES ?= /etc/ssl/certs/ca-certificates.crt
IMAGE_BINS = $(foreach p,$(IMAGE_PLATFORMS),$(IMAGE_BIN_DIR)/magnum-gitops_$(VERSION)_$(subst /,_,$(p)))

.PHONY: image e2e-image FORCE
image: $(IMAGE_BINS) ## Build the image for IMAGE_PLATFORMS as an OCI layout in bin/image/oci, no daemon; prints its digest
	@test -f $(CA_CERTIFICATES) || { echo "$(CA_CERTIFICATES) is missing: apt-get install ca-certificates" >&2; exit 1; }
	@digest=$$($(GO) run ./hack/ociimage --output $(IMAGE_OUT) --name $(IMAGE_NAME) --version $(VERSION) \
	  --revision $(COMMIT) --created $(DATE) --ca-certificates $(CA_CERTIFICATES) \
	  $(foreach p,$(IMAGE_PLATFORMS),--binary $(p)=$(IMAGE_BIN_DIR)/magnum-gitops_$(VERSION)_$(subst /,_,$(p)))) && \
	  echo "$(IMAGE_NAME):$(VERSION)@$$digest in $(IMAGE_OUT)"

# Static (CGO off), -trimpath, stripped, version stamped; the revision too, as make build.
# Always run: Go's cache makes an unchanged binary cheap.
$(IMAGE_BIN_DIR)/magnum-gitops_$(VERSION)_linux_%: FORCE
	CGO_ENABLED=0 GOOS=linux GOARCH=$* $(GO) build -buildvcs=auto -trimpath $(GOFLAGS) -ldflags '-s -w $(LDFLAGS_VERSION)' -o $@ ./cmd/magnum-gitops
FORCE:

# The service's Helm chart (deploy/chart/magnum-gitops), through the Helm SDK in go.mod
# (hack/chart): linted with each of its ci/ values files, packaged with VERSION as version
# and appVersion, its files dated by the commit, so the same commit gives the same bytes.
CHART_OUT ?= bin
.PHONY: chart deploy-manifests
chart: ## Lint and package the Helm chart into bin/magnum-gitops-VERSION.tgz (CHART_OUT=dir)
	$(GO) run ./hack/chart package -version $(VERSION) -date $(DATE) -out $(CHART_OUT)

deploy-manifests: ## Render deploy/service (kubectl apply -f) from the Helm chart
	$(GO) run ./hack/chart manifests -out deploy/service

test: testbin lint test-driver ## Run every test (builds the test binaries on first use)
	KUBEBUILDER_ASSETS="$(TESTBIN_DIR)" $(GO) test $(GOFLAGS) -count=1 -timeout 30m $(PKGS)

test-driver: build ## The Magnum driver shim's tests (Python, Magnum's own fixtures) against bin/magnum-gitops
	MAGNUM_GITOPS_BIN=$(CURDIR)/$(BIN) contrib/magnum-driver/run-tests.sh

test-unit: ## Run the tests that need no API server
	$(GO) test $(GOFLAGS) -count=1 $(PKGS)

flux: ## Build or reuse Flux's source-, kustomize- and helm-controller (first build 15-35 min)
	@hack/flux.sh | tail -n 1

capi: ## Build or reuse Cluster API's controllers (core, kubeadm, CAPD in memory) and a garbage collector (first build ~10 min)
	@hack/capi.sh | tail -n 1

gitea: ## Build or reuse a real Gitea for the review-mode tests (first build ~4-10 min)
	@hack/gitea.sh | tail -n 1

# Minutes once the binaries are cached: the scenarios run with a reconcile requested after
# each push; E2E_FULL=1 runs them again relying on the GitRepository interval (about a
# minute per step, 10 minutes more). As root the tests run in a network namespace of their
# own (CAPD's in-memory backend listens on fixed ports); E2E_NETNS=0 turns that off.
# E2E_RUN and E2E_SKIP pick the tests (go test -run, -skip): CI runs the review scenarios
# (E2E_RUN='^TestE2EReview') and the Argo CD ones (E2E_RUN='^TestE2EArgo') beside the
# others, each set in a network namespace of its own. E2E_ARGOCD=0 leaves Argo CD out (its
# tests skip, and it is not built).
E2E_RUN ?=
E2E_SKIP ?=
E2E_ARGOCD ?= 1
E2E_ARGOCD_ENV = $(if $(filter 1,$(E2E_ARGOCD)),ARGOCD_TESTS=1 ARGOCD_BIN="$$(hack/argocd.sh | tail -n 1)" \
  SOPS_BIN="$$(hack/sops.sh | tail -n 1)" KUSTOMIZE_BIN="$$(hack/kustomize.sh | tail -n 1)")
e2e: testbin flux capi gitea build ## End to end through the real Flux, Argo CD and Cluster API controllers and a real Gitea (test/e2e; E2E_FULL=1 for the interval run too)
	KUBEBUILDER_ASSETS="$(TESTBIN_DIR)" FLUX_BIN="$$(hack/flux.sh | tail -n 1)" CAPI_BIN="$$(hack/capi.sh | tail -n 1)" \
	  GITEA_BIN="$$(hack/gitea.sh | tail -n 1)" $(E2E_ARGOCD_ENV) \
	  MAGNUM_GITOPS_BIN="$(CURDIR)/$(BIN)" $(GO) test $(GOFLAGS) -tags e2e ./test/e2e -count=1 -timeout 90m -v \
	  $(if $(E2E_RUN),-run '$(E2E_RUN)') $(if $(E2E_SKIP),-skip '$(E2E_SKIP)')

argocd: ## Build or reuse Argo CD v3.6.1's controllers and helm, from the Go module proxy (first build ~5-18 min)
	@hack/argocd.sh | tail -n 1

# The real Argo CD controllers (application controller, repo server, Redis from Debian's
# redis-server) syncing Applications from a real Git server; records fixtures/status/argo
# with ARGOCD_RECORD=1.
e2e-argocd: testbin argocd ## The real Argo CD controllers against a real API server and Git server (internal/testenv/argocd)
	ARGOCD_TESTS=1 KUBEBUILDER_ASSETS="$(TESTBIN_DIR)" ARGOCD_BIN="$$(hack/argocd.sh | tail -n 1)" SOPS_BIN="$$(hack/sops.sh | tail -n 1)" $(GO) test $(GOFLAGS) ./internal/testenv/argocd/ -count=1 -timeout 30m -v

# A cluster's whole life in Argo mode: create, a refused resize, node groups, a chained
# upgrade, delete, and a driver-made cluster adopted, through serve, real Argo CD (kustomize
# with Helm, the sops plugin) and the real Cluster API controllers, the site's
# post-renderers the Applications' kustomize patches. make e2e runs these too.
e2e-argocd-capi: testbin flux capi argocd build ## Cluster API through real Argo CD with chart patches (test/e2e TestE2EArgoClusterAPI)
	ARGOCD_TESTS=1 KUBEBUILDER_ASSETS="$(TESTBIN_DIR)" FLUX_BIN="$$(hack/flux.sh | tail -n 1)" CAPI_BIN="$$(hack/capi.sh | tail -n 1)" \
	  ARGOCD_BIN="$$(hack/argocd.sh | tail -n 1)" SOPS_BIN="$$(hack/sops.sh | tail -n 1)" KUSTOMIZE_BIN="$$(hack/kustomize.sh | tail -n 1)" \
	  MAGNUM_GITOPS_BIN="$(CURDIR)/$(BIN)" $(GO) test $(GOFLAGS) -tags e2e ./test/e2e -run '^TestE2EArgoClusterAPI' -count=1 -timeout 30m -v

# Argo CD (and Flux) at scale: ARGOCD_SCALE clusters in one commit, every Application synced,
# each controller's CPU and peak memory (test/e2e TestE2EArgoScale; docs/figures-argocd.md).
ARGOCD_SCALE ?= 100
e2e-argocd-scale: testbin flux argocd build ## Argo CD and Flux at scale (ARGOCD_SCALE clusters; not in CI)
	ARGOCD_TESTS=1 ARGOCD_SCALE=$(ARGOCD_SCALE) KUBEBUILDER_ASSETS="$(TESTBIN_DIR)" FLUX_BIN="$$(hack/flux.sh | tail -n 1)" \
	  ARGOCD_BIN="$$(hack/argocd.sh | tail -n 1)" SOPS_BIN="$$(hack/sops.sh | tail -n 1)" KUSTOMIZE_BIN="$$(hack/kustomize.sh | tail -n 1)" \
	  MAGNUM_GITOPS_BIN="$(CURDIR)/$(BIN)" $(GO) test $(GOFLAGS) -tags e2e ./test/e2e -run '^TestE2EArgoScale$$' -count=1 -timeout 150m -v

# The real Magnum 15 (magnum-api, magnum-conductor, Keystone, Glance, RabbitMQ, MariaDB from
# Debian, installed on first use) with the driver shim installed from its wheel, driven by
# the openstack coe CLI and magnum-tempest-plugin; test/magnum/README.md.
# E2E_MAGNUM_TESTS picks test/magnum's files (all of them by default).
E2E_MAGNUM_TESTS ?=
e2e-magnum: build ## End to end through the real Magnum stack and the openstack CLI (test/magnum)
	MAGNUM_GITOPS_BIN="$(CURDIR)/$(BIN)" hack/e2e-magnum.sh $(E2E_MAGNUM_TESTS)

e2e-magnum-capi: testbin flux capi build ## The Magnum lifecycle against real Flux and Cluster API (test/magnum, E2E_MAGNUM_CAPI=1)
	E2E_MAGNUM_CAPI=1 KUBEBUILDER_ASSETS="$(TESTBIN_DIR)" FLUX_BIN="$$(hack/flux.sh | tail -n 1)" \
	  CAPI_BIN="$$(hack/capi.sh | tail -n 1)" MAGNUM_GITOPS_BIN="$(CURDIR)/$(BIN)" hack/e2e-magnum.sh test_lifecycle.py

# Not in CI: renders E2E_SCALE_CLUSTERS (2,000) clusters and syncs them twice (one
# Kustomization, then one per project namespace); tens of minutes on 2 cores.
e2e-scale: testbin flux ## Repository layouts at scale through the real Flux controllers (test/e2e TestE2EScale)
	E2E_SCALE=1 KUBEBUILDER_ASSETS="$(TESTBIN_DIR)" FLUX_BIN="$$(hack/flux.sh | tail -n 1)" $(GO) test $(GOFLAGS) -tags e2e ./test/e2e -run '^TestE2EScale$$' -count=1 -timeout 150m -v

# As root: runc (OCI_RUNTIME=crun where cgroups are v2 alone) runs the image from IMAGE_OUT.
# It builds the image for this machine's platform alone: the run needs no other, and a cold
# build for a second architecture would cost CI the whole module graph again.
HOST_PLATFORM = linux/$(shell $(GO) env GOARCH)
e2e-image: testbin ## Run the image with a real OCI runtime as the Deployment does (test/image; root, runc)
	$(MAKE) --no-print-directory image IMAGE_PLATFORMS=$(HOST_PLATFORM) IMAGE_OUT=bin/image/oci-host
	KUBEBUILDER_ASSETS="$(TESTBIN_DIR)" MAGNUM_GITOPS_IMAGE="$(abspath bin/image/oci-host)" \
	  $(GO) test $(GOFLAGS) -tags image ./test/image -count=1 -timeout 20m -v

# Every artifact of one release into RELEASE_DIR, with SHA256SUMS (hack/release.sh):
# binaries and the image for linux/amd64 and linux/arm64, the chart, the shim's wheel, SBOMs.
RELEASE_DIR ?= bin/release/$(VERSION)
.PHONY: release
release: ## Build release VERSION (must equal the VERSION file) into bin/release/VERSION
	hack/release.sh $(VERSION) $(RELEASE_DIR)

testbin: ## Build or reuse kube-apiserver and etcd for envtest
	@hack/testbin.sh | tail -n 1

demo: build ## Render the example events into a repository and print it
	$(BIN) demo

bench: ## Run the benchmarks
	$(GO) test $(GOFLAGS) -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) $(PKGS)

# Every fuzz target, as package:Name, found in the tracked sources so that a new one cannot
# be left out. CI runs each for seconds (FUZZTIME=5s); run them for minutes locally.
FUZZ_TARGETS = $(shell git grep -o '^func Fuzz[A-Za-z0-9_]*' -- '*_test.go' ':!:*testdata*' | \
  sed -E 's|^(.*)/[^/]*:func (Fuzz.*)|./\1:\2|' | sort)

fuzz: ## Run every fuzz target for FUZZTIME each
	@for t in $(FUZZ_TARGETS); do \
	  pkg=$${t%%:*}; name=$${t##*:}; echo "==> $$name ($$pkg, $(FUZZTIME))"; \
	  GO=$(GO) hack/fuzz.sh $$pkg $$name $(FUZZTIME) || exit 1; \
	done

schemas: ## Write docs/schemas (JSON Schemas of the configuration and the ClusterEvent) from their Go types
	$(GO) run ./hack/schema

update-golden: ## Rewrite the golden files under fixtures/golden
	$(GO) test ./generator -run 'TestGolden' -update

vet: ## go vet and a gofmt check
	$(GO) vet $(PKGS)
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

lint: vet ## go vet, gofmt and golangci-lint (linters and package boundaries: .golangci.yml)
	@bin=$$(hack/golangci-lint.sh) && "$$bin" run --allow-serial-runners ./...

fmt: ## Format the code (gofmt, and goimports grouping through golangci-lint)
	gofmt -w $$(git ls-files '*.go')
	@bin=$$(hack/golangci-lint.sh) && "$$bin" fmt ./...

clean: ## Remove build output
	rm -rf bin
