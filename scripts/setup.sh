#!/usr/bin/env bash
# Installs what building and running tokengate needs on Debian (bookworm): the C libraries
# it links and pkg-config. Only what is missing is installed; `apt-get update` runs only then.
# Usage: scripts/setup.sh [--test] [--image]
#   --test   adds what the test suite needs
#   --image  adds what scripts/image.sh and scripts/image-test.sh need
set -euo pipefail
test=0; image=0
for a in "$@"; do
  case "$a" in
    --test) test=1 ;;
    --image) image=1 ;;
    *) echo "usage: scripts/setup.sh [--test] [--image]" >&2; exit 2 ;;
  esac
done
pkgs=(libevent-dev libssl-dev libcurl4-openssl-dev libhiredis-dev libnghttp2-dev pkg-config openssl curl)
if (( test )); then
  # redis-server: the DPoP replay store tests run a real one on 127.0.0.1.
  # chromium, chromium-driver: the headless browser of the login tests (selenium drives them).
  # nginx, caddy: the ingresses of the decision-mode tests (nginx auth_request, Caddy
  # forward_auth); the tests run each on its own config and ports, never the packages' services.
  # nghttp2-client: nghttp, a second HTTP/2 client of the HTTP/2 tests, and h2load for
  # scripts/audit.sh, which also runs testssl.sh and slowhttptest (beside nginx, the peer).
  pkgs+=(python3 redis-server chromium chromium-driver nginx caddy nghttp2-client testssl.sh slowhttptest)
fi
if (( image )); then
  # mmdebstrap: the image's Debian root filesystem; umoci, skopeo: the OCI image and its
  # archive; podman, runc: the run test (runc: crun refuses this host's mixed cgroups);
  # uidmap: podman's user-namespace helpers; python3: the run test's upstream;
  # dpkg-dev: dpkg-scanpackages, for rebuilding the root filesystem from saved .deb files.
  pkgs+=(mmdebstrap umoci skopeo podman runc uidmap python3 dpkg-dev)
fi
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if (( ${#missing[@]} )); then
  echo "setup: installing ${missing[*]}"
  sudo=""; [[ $(id -u) -eq 0 ]] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
command -v swift >/dev/null || { echo "setup: the Swift toolchain (6.x) is required: https://www.swift.org/install/linux/"; exit 1; }
if (( test )); then
  # One resolution for both files: the audit's REDbot shares packages with the tests.
  python3 -m pip install -q --disable-pip-version-check -r "$(dirname "$0")/../IntegrationTests/requirements.txt" \
    -r "$(dirname "$0")/audit/requirements.txt"
fi
