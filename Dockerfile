# syntax=docker/dockerfile:1
# The magnum-gitops image for those who build with Docker: the same files, user, entrypoint
# and labels as `make image` (hack/ociimage), which needs no daemon and is what a release
# ships. hack/ociimage/dockerfile_test.go keeps the two alike. Build a release's image with
#   docker buildx build --platform linux/amd64,linux/arm64 \
#     --build-arg VERSION=$(cat VERSION) --build-arg COMMIT=$(git rev-parse HEAD) \
#     --build-arg DATE=$(git log -1 --format=%cI) .
ARG VERSION=0.0.0-dev
ARG COMMIT=unknown
ARG DATE=1970-01-01T00:00:00Z

FROM --platform=$BUILDPLATFORM golang:1.26 AS build
ARG TARGETOS TARGETARCH VERSION COMMIT DATE
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH GOTOOLCHAIN=local go build -buildvcs=auto -trimpath -ldflags="-s -w -X github.com/magnum-gitops/magnum-gitops/internal/buildinfo.Version=$VERSION -X github.com/magnum-gitops/magnum-gitops/internal/buildinfo.Commit=$COMMIT -X github.com/magnum-gitops/magnum-gitops/internal/buildinfo.Date=$DATE" -o /out/magnum-gitops ./cmd/magnum-gitops
# The image's files (CA certificates from the golang image's Debian, /etc/passwd,
# /etc/group, /tmp, the binary), laid out by the program that writes the OCI layout.
RUN GOTOOLCHAIN=local go run ./hack/ociimage --rootfs /rootfs --binary /out/magnum-gitops --ca-certificates /etc/ssl/certs/ca-certificates.crt --created "$DATE"

FROM scratch
ARG VERSION COMMIT DATE
COPY --from=build /rootfs/ /
ENV PATH=/usr/local/bin SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/magnum-gitops"]
CMD ["serve", "--config", "/etc/magnum-gitops/config.yaml"]
LABEL org.opencontainers.image.title=magnum-gitops \
      org.opencontainers.image.version=$VERSION \
      org.opencontainers.image.revision=$COMMIT \
      org.opencontainers.image.created=$DATE \
      org.opencontainers.image.source=https://github.com/magnum-gitops/magnum-gitops \
      org.opencontainers.image.licenses=Apache-2.0
