# imagebump's container image: a static musl build of the binary on a small Alpine runtime
# with git, OpenSSH's client and CA certificates.
#
#   docker build --target runtime -t imagebump:0.1.0 .    # the image to publish and to run
#   docker run --rm imagebump:0.1.0 run --dry-run https://github.com/acme/gitops.git
#
# Stages:
#   build    Debian + rustup's musl target for the platform (x86_64 or aarch64) + musl-tools
#            (for the C of ring and mimalloc).
#   runtime  Alpine, non-root user 65532:65532, ENTRYPOINT ["imagebump"]. Build it with
#            `--target runtime`: this is the image for Kubernetes (cronjob.yaml) and `docker run`.
#   action   The last stage, so the one a plain `docker build .` and the GitHub Action
#            (action.yml: `image: Dockerfile`) get: `runtime` with `USER 0:0` (root), because GitHub
#            runs Docker actions as the image's user and only root can write the runner's
#            $GITHUB_OUTPUT and $GITHUB_STEP_SUMMARY files (see docs/github-action.md).
#
# TLS is rustls only (no OpenSSL); the CA bundle comes from Alpine's ca-certificates.
# linux/amd64 and linux/arm64: the build stage runs on the platform being built (BuildKit's
# TARGETARCH picks the musl target; the release workflow emulates the other one with QEMU).
#
# Base images are pinned by tag. To pin by digest as well, resolve the tag and append it,
# e.g. `docker buildx imagetools inspect alpine:3.22` -> `alpine:3.22@sha256:<digest>`,
# through the build arguments or in place, and move the digest when you move the tag.

ARG RUST_IMAGE=rust:1.95-bookworm
ARG RUNTIME_IMAGE=alpine:3.22

FROM ${RUST_IMAGE} AS build
ARG TARGETARCH=amd64
# musl-tools from the base's Debian release; the toolchain itself is pinned by RUST_IMAGE.
# hadolint ignore=DL3008
RUN case "${TARGETARCH}" in \
      amd64) echo x86_64-unknown-linux-musl ;; \
      arm64) echo aarch64-unknown-linux-musl ;; \
      *) echo "unsupported TARGETARCH ${TARGETARCH}" >&2; exit 1 ;; \
    esac > /rust-target \
    && apt-get update \
    && apt-get install -y --no-install-recommends musl-tools \
    && rm -rf /var/lib/apt/lists/* \
    && rustup target add "$(cat /rust-target)"
WORKDIR /src
COPY Cargo.toml Cargo.lock ./
COPY src ./src
COPY crates ./crates
# --locked: exactly the dependency versions of Cargo.lock. The check after the build fails
# the image if the binary came out dynamically linked.
RUN target="$(cat /rust-target)" \
    && cargo build --release --locked --target "${target}" \
    && install -m 0755 "target/${target}/release/imagebump" /usr/local/bin/imagebump \
    && readelf -d /usr/local/bin/imagebump > /tmp/dynamic-section.txt \
    && if grep NEEDED /tmp/dynamic-section.txt; then \
         echo "imagebump is not statically linked" >&2; exit 1; \
       fi

FROM ${RUNTIME_IMAGE} AS runtime
ARG VERSION=0.1.0
ARG SOURCE=https://github.com/OWNER/imagebump
LABEL org.opencontainers.image.title="imagebump" \
      org.opencontainers.image.description="Keeps the container images of a GitOps manifest repository current through reviewable pull requests" \
      org.opencontainers.image.source="${SOURCE}" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.version="${VERSION}"
# Package versions follow the base image's Alpine branch (pinning apk versions breaks the
# build as soon as Alpine ships a security fix); pin RUNTIME_IMAGE by digest to freeze them.
# hadolint ignore=DL3018
RUN apk add --no-cache ca-certificates git openssh-client \
    && addgroup -S -g 65532 imagebump \
    && adduser -S -D -u 65532 -G imagebump -h /home/imagebump -s /sbin/nologin imagebump
COPY --from=build /usr/local/bin/imagebump /usr/local/bin/imagebump
# git and ssh want a writable HOME (ssh keeps known_hosts there). imagebump runs git with
# GIT_CONFIG_GLOBAL=/dev/null and GIT_CONFIG_NOSYSTEM=1, so nothing else is read from it.
# The clone goes to TMPDIR. With a read-only root filesystem, mount emptyDirs on both.
ENV HOME=/home/imagebump \
    TMPDIR=/tmp
USER 65532:65532
ENTRYPOINT ["imagebump"]
CMD ["--help"]

# The GitHub Action's image: see the header. Kubernetes and `docker run` use `runtime`.
FROM runtime AS action
# hadolint ignore=DL3002
USER 0:0
