# syntax=docker/dockerfile:1
# Herald's image: the static binary of scripts/release (CGO_ENABLED=0,
# -trimpath, version and commit stamped) on distroless/static, which holds
# CA certificates, /etc/passwd with the user nonroot (65532) and nothing else.
# See docs/deploy.md#container.
#
#   docker build -t herald \
#     --build-arg VERSION="$(git describe --tags --always --dirty)" \
#     --build-arg COMMIT="$(git rev-parse HEAD)" .
#
# Without the build arguments the version and commit come from the build
# context's .git when it is a plain checkout (not a git worktree).

ARG GO_VERSION=1.26.8

FROM --platform=$BUILDPLATFORM golang:${GO_VERSION} AS build
WORKDIR /src
COPY go.mod go.sum ./
# The Go client is a module of its own that the server requires (a replace
# directive to ./client): its go.mod is needed to resolve the modules.
COPY client/go.mod client/go.sum ./client/
RUN go mod download
COPY . .
ARG TARGETOS=linux
ARG TARGETARCH=amd64
# Stamped into `herald version`; scripts/release reads them from the
# environment and falls back to git.
ARG VERSION=""
ARG COMMIT=""
ARG DATE=""
ARG MODIFIED=""
RUN git config --global --add safe.directory /src \
 && scripts/release --target "$TARGETOS/$TARGETARCH" --out /out \
 && mv /out/herald-*-"$TARGETOS"-"$TARGETARCH" /herald \
 && mkdir -m 0700 /data

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /herald /usr/local/bin/herald
# The embedded SQLite store and admin.key (--data); with PostgreSQL only
# admin.key, and nothing when HERALD_ADMIN_KEY is set.
COPY --from=build --chown=65532:65532 /data /var/lib/herald
ENV HERALD_DATA=/var/lib/herald
VOLUME /var/lib/herald
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/herald"]
CMD ["serve", "--addr", "0.0.0.0:8080"]
