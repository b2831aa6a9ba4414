#!/usr/bin/env bash
# build-deb.sh: pack the binaries of an existing CMake build into ds4d_<version>_<arch>.deb.
#
# Nothing is compiled here. CMake writes BUILD_DIR/packaging/artifacts.env with the paths of
# the built ds4d, ds4d-supervisor, ds4ctl and the forged tiny model (the `deb` target builds
# them first). This script assembles a debhelper source tree in BUILD_DIR/packaging/deb-src
# from packaging/debian, the unit files in units/, the man pages and the default
# configuration, runs `dpkg-buildpackage -b` there (dh with the install-from-build-dir rules)
# and leaves the package in OUT_DIR (default BUILD_DIR/packaging).
#
# Usage: build-deb.sh [--arch ARCH] BUILD_DIR [OUT_DIR]
# ARCH is the Debian architecture of the binaries (default: this machine's); arm64 from an amd64
# host packs a cross build (cmake/toolchain-aarch64-linux-gnu.cmake) with dpkg-buildpackage -a,
# which strips with the cross binutils and resolves shared-library dependencies against the
# arm64 libraries installed by multiarch.
# Prints the path of the .deb on the last stdout line.
set -euo pipefail
arch=$(dpkg --print-architecture)
if [ "${1:-}" = --arch ]; then
  arch=${2:?usage: build-deb.sh [--arch ARCH] BUILD_DIR [OUT_DIR]}
  shift 2
fi
host_arch=$(dpkg --print-architecture)
cross_args=()
[ "$arch" = "$host_arch" ] || cross_args=(-a "$arch")

here=$(cd "$(dirname "$0")" && pwd)
src_root=$(cd "$here/.." && pwd)
build_dir=$(cd "${1:?usage: build-deb.sh BUILD_DIR [OUT_DIR]}" && pwd)
out_dir=${2:-$build_dir/packaging}
mkdir -p "$out_dir"
out_dir=$(cd "$out_dir" && pwd)

artifacts="$build_dir/packaging/artifacts.env"
[ -f "$artifacts" ] || { echo "build-deb: $artifacts missing; configure with CMake first" >&2; exit 1; }
# shellcheck source=/dev/null
. "$artifacts"
for var in DS4D_VERSION DS4D_DAEMON DS4D_SUPERVISOR DS4D_CTL DS4D_MODEL DS4D_MTP DS4D_MAN_DIR; do
  val=${!var:-}
  if [ -z "$val" ] || { [ "$var" != DS4D_VERSION ] && [ ! -e "$val" ]; }; then
    echo "build-deb: $var='${val}' is not built (cmake --build $build_dir --target deb)" >&2
    exit 1
  fi
done

pkg_src="$build_dir/packaging/deb-src/ds4d-$DS4D_VERSION"
rm -rf "$build_dir/packaging/deb-src"
mkdir -p "$pkg_src"
cp -r "$here/debian" "$pkg_src/debian"
cp "$src_root/units/ds4d.service" "$pkg_src/debian/ds4d.service"
cp "$src_root/units/ds4d.sysusers" "$pkg_src/debian/ds4d.sysusers"
cp "$src_root/units/ds4d.tmpfiles" "$pkg_src/debian/ds4d.tmpfiles"
cp -r "$DS4D_MAN_DIR" "$pkg_src/man"
mkdir -p "$pkg_src/conf"
cp "$src_root/units/ds4d.toml" "$pkg_src/conf/ds4d.toml"
# Gateway mode and the HAProxy configuration for replicas (docs/scale-out.md): shipped, not enabled.
cp "$src_root/units/ds4d-gateway.service" "$src_root/units/gateway.toml" "$pkg_src/conf/"
cp "$here/haproxy/ds4d-replicas.cfg" "$pkg_src/conf/haproxy-ds4d-replicas.cfg"
cp "$here/grafana/ds4d-dashboard.json" "$pkg_src/conf/ds4d-dashboard.json"
cat > "$pkg_src/debian/artifacts.mk" <<EOF
DS4D_DAEMON := $DS4D_DAEMON
DS4D_SUPERVISOR := $DS4D_SUPERVISOR
DS4D_CTL := $DS4D_CTL
DS4D_MODEL := $DS4D_MODEL
DS4D_MTP := $DS4D_MTP
EOF

# One changelog entry for the version CMake builds; the date is the commit's, so two builds
# of one commit give the same package metadata.
git_rev=$(git -C "$src_root" rev-parse --short HEAD 2>/dev/null || echo unknown)
epoch=${SOURCE_DATE_EPOCH:-$(git -C "$src_root" log -1 --format=%ct 2>/dev/null || date +%s)}
sed -e "s/@VERSION@/$DS4D_VERSION/g" -e "s/@GITREV@/$git_rev/g" \
    -e "s/@DATE@/$(LC_ALL=C date -R -u -d "@$epoch")/g" \
    "$here/debian/changelog.in" > "$pkg_src/debian/changelog"
rm "$pkg_src/debian/changelog.in"

log="$build_dir/packaging/dpkg-buildpackage.log"
if ! (cd "$pkg_src" && SOURCE_DATE_EPOCH=$epoch dpkg-buildpackage -b -uc -us "${cross_args[@]}" >"$log" 2>&1); then
  tail -n 40 "$log" >&2
  echo "build-deb: dpkg-buildpackage failed (log: $log)" >&2
  exit 1
fi

deb="ds4d_${DS4D_VERSION}_${arch}.deb"
for f in "$build_dir/packaging/deb-src/"ds4d_"$DS4D_VERSION"_"$arch".*; do
  [ "$out_dir" = "$build_dir/packaging/deb-src" ] || mv -f "$f" "$out_dir/"
done
echo "build-deb: built $out_dir/$deb" >&2
echo "$out_dir/$deb"
