#!/usr/bin/env bash
# Install Debian's headless browser for tests/learner/test_browser.py: `apt-get install -y chromium chromium-driver`.
# The test drives chromium over the DevTools protocol (chromedriver is installed for Selenium users).
# Without root or apt-get this says why and exits 0: the browser test then skips with a reason.
# (Debian's packages; on Ubuntu `chromium` is a snap stub that does not run in containers.)
set -euo pipefail

if command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; then
  echo "install-browser: chromium and chromedriver are already installed"
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "install-browser: not root, not installing chromium (the browser test will skip)"
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "install-browser: no apt-get here, not installing chromium (the browser test will skip)"
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq chromium chromium-driver
chromium --version 2>/dev/null || true
