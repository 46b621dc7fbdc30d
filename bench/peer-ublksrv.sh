#!/bin/bash
# Builds the reference ublk server the cost scenario (bench: scenario c) measures beside uraid,
# from a source checkout the caller provides, outside this repository: the guest runs the host's
# binaries, so the build happens here, on the host, and its `ublk` command is what benchrun's
# -peer-ublk flag names. It is a benchmark peer only: nothing of it is committed here.
#   bench/peer-ublksrv.sh SRC [OUT]
# SRC is an unpacked source tree (configure.ac at its top); OUT (default /work/peer/ublksrv)
# receives the build. Build dependencies come from apt when missing (autoconf automake libtool
# pkg-config liburing-dev, Debian's names). It needs liburing 2.4 or later (its buffer rings):
# where the distribution's is older (Debian 12 has 2.3), LIBURING_SRC names an unpacked liburing
# source tree, whose static library is built under OUT and linked in, so that the command runs
# in the guest without it. Prints the path of the built ublk command.
set -euo pipefail
src=${1:?usage: bench/peer-ublksrv.sh SRC [OUT]: SRC is a source checkout of the reference ublk server}
out=${2:-/work/peer/ublksrv}
[ -f "$src/configure.ac" ] || { echo "peer-ublksrv: $src has no configure.ac: give the top of the source tree" >&2; exit 1; }
need=()
for p in autoconf automake libtool pkg-config liburing-dev; do
	dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
	echo "peer-ublksrv: installing ${need[*]}" >&2
	apt-get install -y "${need[@]}" >&2
fi
mkdir -p "$out"
# Build in a copy, so the checkout stays as given.
rm -rf "$out/src"
cp -a "$src" "$out/src"
# Its library statically linked (the C programs then need the C++ runtime its JSON code uses), so
# that the command needs nothing from the build tree at run time.
cfg=(--disable-shared LIBS=-lstdc++)
if ! pkg-config --atleast-version=2.4 liburing; then
	lib=${LIBURING_SRC:?"peer-ublksrv: liburing $(pkg-config --modversion liburing 2>/dev/null || echo "(none)") is older than 2.4: set LIBURING_SRC to a liburing source tree"}
	[ -f "$lib/src/include/liburing.h" ] || [ -f "$lib/configure" ] ||
		{ echo "peer-ublksrv: $lib is not a liburing source tree (no configure)" >&2; exit 1; }
	rm -rf "$out/liburing"
	cp -a "$lib" "$out/liburing"
	(cd "$out/liburing" && ./configure >&2 && make -C src -j"${JOBS:-1}" liburing.a >&2)
	l=$out/liburing
	# Only the static library is built, so -luring finds it and not the system's older one.
	cfg+=(PKG_CONFIG_PATH="$l" CFLAGS="-I$l/src/include -O2" CXXFLAGS="-I$l/src/include -O2" LDFLAGS="-L$l/src")
fi
cd "$out/src"
autoreconf -i >&2
./configure "${cfg[@]}" >&2
make -j"${JOBS:-1}" >&2
[ -x "$out/src/ublk" ] || { echo "peer-ublksrv: the build produced no ublk command in $out/src" >&2; exit 1; }
echo "$out/src/ublk"
