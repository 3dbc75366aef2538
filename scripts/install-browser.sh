#!/usr/bin/env bash
# Make Debian's chromium, its driver and a Chinese font available for the browser test, idempotently.
#
#   bash scripts/install-browser.sh      # as root (or through sudo)
#
# Installs, only when missing: chromium (/usr/bin/chromium), chromium-driver
# (/usr/bin/chromedriver) and fonts-wqy-microhei (so Chinese text renders in the
# screenshot instead of empty boxes). Nothing here downloads a browser build of
# its own: Debian's packages only. When everything is there it takes well under a second.
set -euo pipefail

log() { echo "install-browser: $*" >&2; }

if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then
        exec sudo bash "$0" "$@"
    fi
    log "error: run as root (apt-get needs it)"
    exit 1
fi

packages=()
[ -x /usr/bin/chromium ] || packages+=(chromium)
[ -x /usr/bin/chromedriver ] || packages+=(chromium-driver)
if ! { command -v fc-list >/dev/null 2>&1 && [ -n "$(fc-list :lang=zh 2>/dev/null)" ]; }; then
    packages+=(fonts-wqy-microhei)
fi

if [ ${#packages[@]} -eq 0 ]; then
    log "chromium, chromedriver and a Chinese font are already installed"
    exit 0
fi

export DEBIAN_FRONTEND=noninteractive
log "installing ${packages[*]}"
apt-get update -qq
apt-get install -y -qq "${packages[@]}" >/dev/null
/usr/bin/chromium --version 2>/dev/null | grep -i chromium >&2 || true
[ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ] || {
    log "error: chromium or chromedriver is still missing"
    exit 1
}
log "done"
