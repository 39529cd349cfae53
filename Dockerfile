# syntax=docker/dockerfile:1
# The magnum-gitops image: a static binary on distroless, running as non-root.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 GOTOOLCHAIN=local go build -trimpath -ldflags="-s -w" -o /out/magnum-gitops ./cmd/magnum-gitops

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/magnum-gitops /usr/local/bin/magnum-gitops
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/magnum-gitops"]
