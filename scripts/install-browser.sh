#!/bin/sh
# Installs the headless browser the console's browser tests drive (Debian's chromium and
# chromium-driver: /usr/bin/chromium, /usr/bin/chromedriver). Idempotent: does nothing when both
# are present. The tests speak WebDriver from Rust, so no npm packages are needed.
set -eu
if [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ]; then
    echo "chromium and chromedriver already installed"
    exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
$SUDO apt-get update -q
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends chromium chromium-driver
/usr/bin/chromium --version
/usr/bin/chromedriver --version
