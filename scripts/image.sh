#!/usr/bin/env bash
# Builds tokengate's container image without Docker: a release binary with the Swift runtime
# linked in, on a minimal Debian bookworm root filesystem that holds only the shared libraries
# the binary links and the CA bundle (no shell, no apt, no dpkg), written as an OCI archive.
#
# Usage: scripts/image.sh [--binary FILE] [--debs DIR] [--out FILE]
#   --binary FILE  use this release binary (stripped here) instead of building one
#   --debs DIR     build the root filesystem from these .deb files, offline (a previous
#                  build's .build-image/debs), instead of fetching bookworm's newest ones
#   --out FILE     where to write the archive (default .build-image/tokengate.oci.tar)
# Needs root (mmdebstrap --mode=root, chroot). Prints the digest and sizes; writes
# .build-image/{tokengate,debs/,packages.txt,digest}.
#
# Reproducible: the same binary, the same .deb files and the same SOURCE_DATE_EPOCH (the
# last commit's time unless set) give the same image digest. Without --debs, apt fetches
# the newest bookworm packages, so a later build can differ by a security update: that is
# a different input, recorded in packages.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
root_dir=$PWD
binary="" debs="" out=".build-image/tokengate.oci.tar"
while (( $# )); do
  case "$1" in
    --binary) binary=$(realpath "$2"); shift 2 ;;
    --debs) debs=$(realpath "$2"); shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) sed -n 6,12p "$0" >&2; exit 2 ;;
  esac
done
[[ $(id -u) -eq 0 ]] || { echo "image: run as root (mmdebstrap and chroot need it)" >&2; exit 1; }
scripts/setup.sh --image
work=.build-image
mkdir -p "$work"
tmp=$(mktemp -d "$root_dir/$work/tmp.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct)}
created=$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%dT%H:%M:%SZ)
t0=$SECONDS

# --- 1. the binary -------------------------------------------------------------------------
if [[ -z "$binary" ]]; then
  echo "== image: release build (--static-swift-stdlib) in .build-release"
  # Its own scratch path, so the debug build of scripts/test.sh is not rebuilt after it.
  "$root_dir/scripts/build-release.sh"
  binary="$root_dir/.build-release/release/tokengate"
fi
# Stripped: the debug info is most of the 84 MB; a crash still gives symbolized Swift frames.
strip -o "$work/tokengate.new" "$binary" && mv "$work/tokengate.new" "$work/tokengate"

# --- 2. the packages: the ones owning every library the binary links, checked with ldd -----
pkgs=(libc6 libgcc-s1 libstdc++6 libssl3 libcurl4 libhiredis0.14 libnghttp2-14
      libevent-2.1-7 libevent-core-2.1-7 libevent-extra-2.1-7 libevent-openssl-2.1-7
      libevent-pthreads-2.1-7
      # libcurl4's libraries:
      libbrotli1 libcom-err2 libffi8 libgmp10 libgnutls30 libgssapi-krb5-2 libhogweed6
      libidn2-0 libk5crypto3 libkeyutils1 libkrb5-3 libkrb5support0 libldap-2.5-0 libnettle8
      libp11-kit0 libpsl5 librtmp1 libsasl2-2 libssh2-1 libtasn1-6
      libunistring2 libzstd1 zlib1g
      ca-certificates)
missing=()
while read -r lib; do
  owner=$(dpkg -S "$lib" 2>/dev/null || dpkg -S "$(realpath "$lib")" 2>/dev/null || dpkg -S "/usr$lib") \
    || { echo "image: no package owns $lib" >&2; exit 1; }
  owner=${owner%%:*}
  [[ " ${pkgs[*]} " == *" $owner "* ]] || missing+=("$owner ($lib)")
done < <(ldd "$work/tokengate" | awk '/=> \//{print $3} /^[[:space:]]*\/.*ld-linux/{print $1}')
if (( ${#missing[@]} )); then
  echo "image: the binary links libraries of packages not in the image's list: ${missing[*]}" >&2
  exit 1
fi

# --- 3. the root filesystem -------------------------------------------------------------------
rootfs="$tmp/rootfs"
if [[ -n "$debs" ]]; then
  echo "== image: root filesystem from $(ls "$debs"/*.deb | wc -l) saved .deb files (offline)"
  # A flat apt repository of just those files: apt resolves the same package names to them
  # and copies them in (copy://), so the set and the versions are the saved ones.
  (cd "$debs" && dpkg-scanpackages --multiversion . /dev/null 2>/dev/null > Packages)
  include=("--include=$(IFS=,; echo "${pkgs[*]}")")
  source_args=(bookworm "$rootfs" "deb [trusted=yes] copy://$debs ./")
else
  echo "== image: root filesystem from bookworm (newest packages)"
  include=("--include=$(IFS=,; echo "${pkgs[*]}")")
  # The host's own apt sources (bookworm, -updates, -security): the same mirror apt uses here.
  source_args=(bookworm "$rootfs" /etc/apt/sources.list.d/*.sources)
  [[ -e /etc/apt/sources.list.d/debian.sources ]] || source_args=(bookworm "$rootfs")
fi
# --variant=extract: unpack the packages (and their dependencies) without installing them, so
#   no maintainer script runs and nothing needs a shell, dpkg or a dpkg database in the image.
# merged-usr hook: /bin, /lib, /lib64 are symlinks into /usr, as in any bookworm system.
# --skip=cleanup/apt/cache: keep the downloaded .deb files; they are this build's input.
mmdebstrap --quiet --variant=extract --mode=root --format=directory \
  --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr --skip=cleanup/apt/cache \
  "${include[@]}" "${source_args[@]}"
if [[ -z "$debs" ]]; then
  rm -rf "$work/debs" && mkdir -p "$work/debs"
  cp "$rootfs"/var/cache/apt/archives/*.deb "$work/debs/"
fi
for d in "${debs:-$work/debs}"/*.deb; do dpkg-deb -f "$d" Package Version | paste -sd=; done \
  | sed 's/=Version: /=/; s/^Package: //' | LC_ALL=C sort > "$work/packages.txt"

# CA bundle: what ca-certificates' postinst would make (it is never run here): every
# certificate it ships, in name order, concatenated.
mkdir -p "$rootfs/etc/ssl/certs"
(cd "$rootfs/usr/share/ca-certificates" && find . -name '*.crt' | sed 's|^\./||' | LC_ALL=C sort) \
  > "$rootfs/etc/ca-certificates.conf"
while read -r crt; do
  sed -e '$a\' "$rootfs/usr/share/ca-certificates/$crt"
done < "$rootfs/etc/ca-certificates.conf" > "$rootfs/etc/ssl/certs/ca-certificates.crt"

# Keep only libraries, their data and licences. Dropped: every program (openssl, c_rehash,
# debconf's perl scripts, update-ca-certificates), debconf and perl modules, docs but the
# copyright files, glibc's gconv modules (tokengate calls no iconv; 8 MB), and what
# mmdebstrap set up for apt and dpkg. /dev is the runtime's; resolv.conf and hostname are
# the build host's (the runtime mounts its own).
(
  cd "$rootfs"
  rm -rf usr/bin/* usr/sbin/* usr/share/perl5 usr/share/debconf usr/share/man usr/share/locale \
    usr/share/lintian usr/share/bash-completion usr/share/pixmaps usr/share/gdb usr/share/gcc \
    usr/share/bug usr/share/info usr/lib/x86_64-linux-gnu/gconv usr/lib/x86_64-linux-gnu/perl* \
    etc/debconf.conf etc/apt etc/dpkg var/lib/apt var/lib/dpkg var/cache/* var/log/* \
    etc/resolv.conf etc/hostname etc/fstab dev/*
  find usr/share/doc -type f ! -name copyright -delete
  find usr/share/doc -depth -type d -empty -delete
  mkdir -p etc/tokengate usr/local/bin proc sys tmp
  chmod 1777 tmp
  # The user of the Dockerfile: numeric 10001, no home, no login shell.
  printf 'root:x:0:0:root:/root:/usr/sbin/nologin\ntokengate:x:10001:10001:tokengate:/nonexistent:/usr/sbin/nologin\n' > etc/passwd
  printf 'root:x:0:\ntokengate:x:10001:\n' > etc/group
)
install -m 0755 "$work/tokengate" "$rootfs/usr/local/bin/tokengate"
# The image's own loader and libraries run the binary: proves nothing is missing. /proc is
# mounted (in a private mount namespace) because the Swift runtime reads the arguments there.
version=$(unshare --mount sh -c 'mount -t proc proc "$1/proc" && chroot "$1" /usr/local/bin/tokengate version' \
  _ "$rootfs" | awk '$1 == "tokengate" {print $2}')
[[ -n "$version" ]] || { echo "image: tokengate does not run in the root filesystem" >&2; exit 1; }
echo "== image: tokengate $version runs in the root filesystem"

# --- 4. the layer: a tar with fixed order, owners and times (GNU tar's reproducible recipe) --
tar --sort=name --format=posix --numeric-owner --owner=0 --group=0 \
  --mtime="@$SOURCE_DATE_EPOCH" --clamp-mtime \
  --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime \
  -C "$rootfs" -cf "$tmp/layer.tar" .

# --- 5. the OCI image and archive -------------------------------------------------------------
revision=$(git rev-parse HEAD)
[[ -z $(git status --porcelain --untracked-files=no) ]] || revision="$revision-dirty"
source_url=${TOKENGATE_IMAGE_SOURCE:-$(git remote get-url origin 2>/dev/null || echo unknown)}
layout="$tmp/oci"
umoci init --layout "$layout"
umoci new --image "$layout:tokengate"
umoci raw add-layer --image "$layout:tokengate" --history.created "$created" \
  --history.created_by "scripts/image.sh" "$tmp/layer.tar"
# The same user, paths, ports, entrypoint, command and stop signal as deploy/Dockerfile.
# PATH as debian:bookworm-slim sets it, so the entrypoint is found by name as there.
umoci config --image "$layout:tokengate" --no-history --created "$created" \
  --author "tokengate" --architecture amd64 --os linux \
  --config.user 10001:10001 --config.workingdir / \
  --config.env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  --config.entrypoint tokengate \
  --config.cmd=serve --config.cmd=--config --config.cmd=/etc/tokengate/tokengate.yaml \
  --config.exposedports 8080/tcp --config.exposedports 9901/tcp \
  --config.stopsignal SIGTERM \
  --config.label "org.opencontainers.image.title=tokengate" \
  --config.label "org.opencontainers.image.source=$source_url" \
  --config.label "org.opencontainers.image.revision=$revision" \
  --config.label "org.opencontainers.image.version=$version" \
  --config.label "org.opencontainers.image.created=$created" \
  --config.label "org.opencontainers.image.description=tokengate on Debian bookworm's libraries (no shell, no package manager)"
umoci gc --layout "$layout"   # drop the blobs of the intermediate configs and manifests
mkdir -p "$(dirname "$out")"
rm -f "$out"
# skopeo writes the final layout (its index names the image tokengate:VERSION); the archive
# is that layout in a tar made like the layer's, so the file, not only the digest, repeats.
skopeo copy --quiet "oci:$layout:tokengate" "oci:$tmp/final:tokengate:$version"
tar --sort=name --format=posix --numeric-owner --owner=0 --group=0 --mtime="@$SOURCE_DATE_EPOCH" \
  --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime -C "$tmp/final" -cf "$out" .

# --- 6. report ------------------------------------------------------------------------------
digest=$(skopeo inspect --format '{{.Digest}}' "oci-archive:$out")
echo "$digest" > "$work/digest"
manifest=$(skopeo inspect --raw "oci-archive:$out")
compressed=$(python3 -c 'import json,sys; m=json.loads(sys.argv[1]); print(sum(l["size"] for l in m["layers"]) + m["config"]["size"])' "$manifest")
echo "== image: built $out in $((SECONDS - t0)) s"
echo "   digest:       $digest"
echo "   archive:      $(stat -c %s "$out") bytes"
echo "   compressed:   $compressed bytes (layers + config, as a registry stores them)"
echo "   uncompressed: $(stat -c %s "$tmp/layer.tar") bytes (the layer tar)"
echo "   packages:     $(wc -l < "$work/packages.txt") (.build-image/packages.txt); SOURCE_DATE_EPOCH=$SOURCE_DATE_EPOCH"
