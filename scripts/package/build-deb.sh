#!/usr/bin/env bash
# make package: fetchd_<version>_<arch>.deb with dpkg-deb, from the release binary built as the
# container's build stage builds it (the Swift runtime linked statically; scratch path
# .build-container, shared with make container-check), the units and files in deploy/debian,
# and the environment file and man page generated from the binary's settings table.
#
#   scripts/package/build-deb.sh [OUTPUT_DIR]      (default .build-package)
#
# Prints the .deb's path last. The version comes from `git describe` (scripts/package/version.sh);
# the maintainer from DEBFULLNAME and DEBEMAIL, as Debian's tools take it, else from git's user.

set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
OUT=${1:-$REPO/.build-package}
SWIFT=${SWIFT:-swift}
SCRATCH=$REPO/.build-container
DEB=$REPO/deploy/debian
STAGE=$OUT/root

die() { printf 'package: %s\n' "$*" >&2; exit 1; }
for tool in dpkg-deb dpkg-shlibdeps gzip python3 git; do
    command -v "$tool" >/dev/null || die "needs $tool (apt-get install dpkg-dev)"
done

cd "$REPO"
VERSION=$(scripts/package/version.sh)
MAINTAINER="${DEBFULLNAME:-$(git config user.name)} <${DEBEMAIL:-$(git config user.email)}>"
[[ $MAINTAINER =~ ^[^\<]+\ \<[^@]+@[^.]+\..+\>$ ]] || die "maintainer '$MAINTAINER': set DEBFULLNAME and DEBEMAIL"
ARCH=$(dpkg --print-architecture)

"$SWIFT" build -c release --static-swift-stdlib --scratch-path "$SCRATCH" --product fetchd >&2
BINARY=$("$SWIFT" build -c release --static-swift-stdlib --scratch-path "$SCRATCH" --show-bin-path)/fetchd
TOOLCHAIN=$(dirname "$(dirname "$(readlink -f "$(command -v "$SWIFT")")")")
BACKTRACER=$TOOLCHAIN/libexec/swift/linux/swift-backtrace-static
[[ -x $BINARY && -x $BACKTRACER ]] || die "no $BINARY or $BACKTRACER"

rm -rf "$STAGE"
install -D -m 0755 "$BINARY" "$STAGE/usr/bin/fetchd"
install -D -m 0755 "$BACKTRACER" "$STAGE/usr/libexec/fetchd/swift-backtrace-static"
strip --strip-unneeded --remove-section=.comment --remove-section=.note "$STAGE/usr/bin/fetchd" \
    "$STAGE/usr/libexec/fetchd/swift-backtrace-static"
install -D -m 0644 "$DEB/fetchd.service" "$STAGE/lib/systemd/system/fetchd.service"
install -D -m 0644 "$DEB/fetchd.socket" "$STAGE/lib/systemd/system/fetchd.socket"
install -D -m 0644 "$DEB/sysusers.conf" "$STAGE/usr/lib/sysusers.d/fetchd.conf"
install -D -m 0644 "$DEB/tmpfiles.conf" "$STAGE/usr/lib/tmpfiles.d/fetchd.conf"
install -d -m 0755 "$STAGE/etc/fetchd" "$STAGE/usr/share/man/man8" "$STAGE/usr/share/doc/fetchd"
python3 scripts/package/settings_files.py --fetchd "$STAGE/usr/bin/fetchd" env "$STAGE/etc/fetchd/fetchd.env"
chmod 0640 "$STAGE/etc/fetchd/fetchd.env"
python3 scripts/package/settings_files.py --fetchd "$STAGE/usr/bin/fetchd" --version "$VERSION" man "$STAGE/usr/share/man/man8/fetchd.8"
gzip -9n "$STAGE/usr/share/man/man8/fetchd.8"
install -m 0644 "$DEB/copyright" "$STAGE/usr/share/doc/fetchd/copyright"
install -m 0644 README.md openapi.yaml "$STAGE/usr/share/doc/fetchd/"
# A native package's changelog: this build, from the commit it was made from.
printf 'fetchd (%s) unstable; urgency=medium\n\n  * Built from %s.\n\n -- %s  %s\n' \
    "$VERSION" "$(git rev-parse --short HEAD)" "$MAINTAINER" "$(git log -1 --format=%aD)" | gzip -9n >"$STAGE/usr/share/doc/fetchd/changelog.gz"

install -d -m 0755 "$STAGE/DEBIAN"
# The shared libraries' packages, as dpkg-shlibdeps finds them (it wants a debian/control).
SHLIBS_DIR=$OUT/shlibs
rm -rf "$SHLIBS_DIR" && mkdir -p "$SHLIBS_DIR/debian"
printf 'Source: fetchd\n\nPackage: fetchd\nArchitecture: any\n' >"$SHLIBS_DIR/debian/control"
SHLIBS=$(cd "$SHLIBS_DIR" && dpkg-shlibdeps -O "$STAGE/usr/bin/fetchd" | sed -n 's/^shlibs:Depends=//p')
[[ -n $SHLIBS ]] || die "dpkg-shlibdeps found no libraries"

install -m 0755 "$DEB/postinst" "$DEB/prerm" "$DEB/postrm" "$STAGE/DEBIAN/"
install -m 0644 "$DEB/conffiles" "$STAGE/DEBIAN/conffiles"
SIZE=$(du -sk --exclude=DEBIAN "$STAGE" | cut -f1)
sed -e "s/@VERSION@/$VERSION/" -e "s|@MAINTAINER@|$MAINTAINER|" -e "s/@ARCH@/$ARCH/" -e "s/@SIZE@/$SIZE/" -e "s/@SHLIBS@/$SHLIBS/" \
    "$DEB/control.in" >"$STAGE/DEBIAN/control"
(cd "$STAGE" && find . -type f ! -path './DEBIAN/*' ! -path './etc/*' -printf '%P\0' | sort -z | xargs -0 md5sum) \
    >"$STAGE/DEBIAN/md5sums"

PACKAGE=$OUT/fetchd_${VERSION}_${ARCH}.deb
dpkg-deb --root-owner-group -Zxz --build "$STAGE" "$PACKAGE" >&2
echo "$PACKAGE"
