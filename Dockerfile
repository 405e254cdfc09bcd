# syntax=docker/dockerfile:1
# Build: docker build -t registry.example.com/scan:v0.1.0 .
# A static binary on distroless: no shell, no package manager, user 65532.

FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o /out/scan ./cmd/scan

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/scan /scan
USER 65532:65532
ENTRYPOINT ["/scan"]
