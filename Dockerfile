# syntax=docker/dockerfile:1
# Build (stamps what `scan version` and every log line report):
#   docker build \
#     --build-arg VERSION="$(git describe --tags --always --dirty)" \
#     --build-arg COMMIT="$(git rev-parse HEAD)" \
#     --build-arg BUILD_TIME="$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
#     -t registry.example.com/scan:v0.1.0 .
# An argument left out falls back to what the Go toolchain embeds.
# A static binary on distroless: no shell, no package manager, user 65532.

FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
ARG VERSION=
ARG COMMIT=
ARG BUILD_TIME=
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 go build -trimpath \
      -ldflags "-s -w -X main.version=${VERSION} -X main.commit=${COMMIT} -X main.buildTime=${BUILD_TIME}" \
      -o /out/scan ./cmd/scan

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/scan /scan
USER 65532:65532
ENTRYPOINT ["/scan"]
