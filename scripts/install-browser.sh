#!/usr/bin/env bash
# Installs Debian's chromium and its chromedriver for the HTML report's browser test
# (tests/report/test_report_browser.py). `make test` runs it before the suites; a no-op when
# both are installed. Needs root (or sudo) and Debian's package archive: no browser is
# downloaded from anywhere else, at install time or when the test runs.
#
# Two `make test` runs at once on a fresh machine (the release check runs two side by side)
# both found the browser missing and both ran apt-get; the second failed on apt's lock
# ("Could not get lock /var/lib/apt/lists/lock"). So installs take a lock of ours first, and
# the check is made again once it is held: the run that waited finds the browser installed.
# apt itself is told to wait for its own locks too (another apt run, an unattended upgrade).
set -euo pipefail
installed() { [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ]; }
if installed; then
  exit 0
fi
LOCK_DIR=${TRACEJUDGE_CACHE_DIR:-$HOME/.cache/tracejudge}
mkdir -p "$LOCK_DIR"
exec 9>"$LOCK_DIR/install-browser.lock"
if ! flock -n 9; then
  echo "install-browser: another run is installing the browser; waiting for it" >&2
  flock 9
fi
if installed; then
  exit 0
fi
SUDO=""
if [ "$(id -u)" != 0 ]; then
  if ! command -v sudo >/dev/null; then
    echo "install-browser: chromium and chromium-driver are missing and this is not root;" >&2
    echo "install-browser: run as root: apt-get install -y chromium chromium-driver" >&2
    exit 1
  fi
  SUDO=sudo
fi
if ! command -v apt-get >/dev/null; then
  echo "install-browser: no apt-get here; install chromium and its chromedriver at" >&2
  echo "install-browser: /usr/bin/chromium and /usr/bin/chromedriver (the browser test starts them)" >&2
  exit 1
fi
echo "install-browser: installing chromium, chromium-driver and a font (Debian packages)" >&2
export DEBIAN_FRONTEND=noninteractive
APT=(apt-get -o DPkg::Lock::Timeout=600)
$SUDO "${APT[@]}" update -qq
$SUDO "${APT[@]}" install -y -qq --no-install-recommends chromium chromium-driver fonts-dejavu-core >/dev/null
