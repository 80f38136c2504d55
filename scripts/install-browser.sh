#!/usr/bin/env bash
# Installs Debian's chromium and its chromedriver for the HTML report's browser test
# (tests/report/test_report_browser.py). `make test` runs it before the suites; a no-op when
# both are installed. Needs root (or sudo) and Debian's package archive: no browser is
# downloaded from anywhere else, at install time or when the test runs.
set -euo pipefail
if [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ]; then
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
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends chromium chromium-driver fonts-dejavu-core >/dev/null
