#!/usr/bin/env bash
# Install everything ibexdb's build, tests and benchmark need. Idempotent: each step checks first and
# prints "==> installing X" or "==> X already present". Safe to run as root with CI=true and no stdin.
#
# What it may install:
#   rustup target wasm32-unknown-unknown, rustfmt + clippy components
#   (x86_64 hosts) rustup target i686-unknown-linux-gnu + gcc-multilib (Debian): the core's tests
#   also run on a 32-bit target, whose layouts are wasm32's
#   wasm-pack (cargo install --locked, pinned)
#   wasm-bindgen-cli at exactly the version of the wasm-bindgen crate in Cargo.lock
#   Debian chromium (/usr/bin/chromium) - Playwright's browser download does not work here
#   Debian firefox-esr (/usr/lib/firefox-esr/firefox-esr) - Playwright's `firefox` project drives it over
#   WebDriver BiDi (scripts/firefox-bidi.mjs)
#   Debian webkit2gtk-driver (WebKitWebDriver; MiniBrowser comes with libwebkit2gtk-4.1) and xvfb (xvfb-run,
#   xauth): the WebKitGTK run of the shared specs (scripts/webkit/) - MiniBrowser has no headless mode
#   openssl (Debian) - the https shipping spec makes a self-signed certificate
#   postgresql (Debian) - the server's PostgreSQL-store tests start a throwaway PostgreSQL of their own
#   npm devDependencies (npm ci): @playwright/test, @sqlite.org/sqlite-wasm, binaryen (wasm-opt), typescript, vite
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD

WASM_PACK_VERSION=0.15.1
export PATH="$HOME/.cargo/bin:$PATH"
export DEBIAN_FRONTEND=noninteractive

say() { printf '==> %s\n' "$*"; }
die() { printf 'setup: error: %s\n' "$*" >&2; exit 1; }
have() { command -v "$1" >/dev/null 2>&1; }

# Run a command as root (directly when we are root, else through sudo -n, which never prompts).
as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"
  elif have sudo; then sudo -n "$@"
  else die "need root for: $*"
  fi
}

# Install Debian package $1, refreshing the package index only when apt doesn't know the package
# (fresh containers have no lists).
apt_install() {
  if ! apt-cache policy "$1" 2>/dev/null | grep -q 'Candidate: [0-9]'; then
    say "apt-get update (package index has no $1 candidate)"
    as_root apt-get update </dev/null
  fi
  as_root apt-get install -y --no-install-recommends "$1" </dev/null
}

# --- Rust toolchain pieces -----------------------------------------------------------------------
have cargo || die "cargo not found: install Rust with rustup first (https://rustup.rs)"
have rustup || die "rustup not found: the wasm32 target and components are installed with rustup"

if rustup target list --installed | grep -qx wasm32-unknown-unknown; then
  say "rust target wasm32-unknown-unknown already present"
else
  say "installing rust target wasm32-unknown-unknown"
  rustup target add wasm32-unknown-unknown
fi

# The core's tests run a second time on i686: pointers are 32-bit there as on wasm32, so the
# layouts that depend on it (a Name's inline bytes, a Value's size) are tested natively.
if [ "$(uname -m)" = x86_64 ]; then
  if rustup target list --installed | grep -qx i686-unknown-linux-gnu; then
    say "rust target i686-unknown-linux-gnu already present"
  else
    say "installing rust target i686-unknown-linux-gnu (the core's 32-bit test run)"
    rustup target add i686-unknown-linux-gnu
  fi
  if ls /usr/lib/gcc/x86_64-linux-gnu/*/32/crtbegin.o >/dev/null 2>&1; then
    say "gcc-multilib already present"
  else
    have apt-get || die "gcc-multilib is missing and apt-get is not available: install a 32-bit C toolchain (gcc -m32) by hand"
    say "installing gcc-multilib (Debian; links the core's i686 tests)"
    apt_install gcc-multilib
  fi
fi

for comp in rustfmt clippy; do
  if rustup component list --installed | grep -q "^${comp}"; then
    say "rust component ${comp} already present"
  else
    say "installing rust component ${comp}"
    rustup component add "${comp}"
  fi
done

# --- wasm-pack -----------------------------------------------------------------------------------
if have wasm-pack && [ "$(wasm-pack --version 2>/dev/null)" = "wasm-pack ${WASM_PACK_VERSION}" ]; then
  say "wasm-pack ${WASM_PACK_VERSION} already present"
else
  say "installing wasm-pack ${WASM_PACK_VERSION} (cargo install --locked; takes ~4 min on 2 cores)"
  if ! cargo install --locked --force wasm-pack --version "${WASM_PACK_VERSION}"; then
    say "cargo install --locked failed (see below for the wasm-bindgen-cli case); retrying wasm-pack without --locked"
    cargo install --force wasm-pack --version "${WASM_PACK_VERSION}"
  fi
fi

# --- wasm-bindgen-cli, pinned to Cargo.lock ------------------------------------------------------
# wasm-pack refuses mismatched versions and cannot download its helper here, so install the exact
# CLI version matching the `wasm-bindgen` crate that the bindings resolve to.
WB_VERSION=""
if [ -f Cargo.lock ]; then
  WB_VERSION=$(awk '
    /^\[\[package\]\]/ { name = ""; next }
    /^name = / { gsub(/"/, "", $3); name = $3; next }
    /^version = / && name == "wasm-bindgen" { gsub(/"/, "", $3); print $3; exit }
  ' Cargo.lock)
fi
if [ -z "${WB_VERSION}" ]; then
  say "wasm-bindgen-cli skipped: Cargo.lock has no wasm-bindgen crate yet (the wasm bindings are not in the workspace)"
elif have wasm-bindgen && [ "$(wasm-bindgen --version 2>/dev/null | awk '{print $2}')" = "${WB_VERSION}" ]; then
  say "wasm-bindgen-cli ${WB_VERSION} already present"
else
  say "installing wasm-bindgen-cli ${WB_VERSION} (matches wasm-bindgen in Cargo.lock; ~2-4 min)"
  # --locked first for reproducibility. The crates.io mirror here has been seen to lack a crate
  # version pinned by the CLI's own lock file (webpki-roots 1.0.11 for 0.2.130); then resolve anew.
  if ! cargo install --locked --force wasm-bindgen-cli --version "${WB_VERSION}"; then
    say "cargo install --locked failed; retrying wasm-bindgen-cli ${WB_VERSION} without --locked"
    cargo install --force wasm-bindgen-cli --version "${WB_VERSION}"
  fi
fi

# --- Chromium (Debian package) -------------------------------------------------------------------
if [ -x /usr/bin/chromium ]; then
  say "chromium already present ($(/usr/bin/chromium --version 2>/dev/null | head -n1))"
else
  have apt-get || die "/usr/bin/chromium is missing and apt-get is not available: install Chromium by hand"
  say "installing chromium (Debian package)"
  apt_install chromium
fi

# --- Firefox ESR and WebKitGTK (Debian packages): the other browsers of `make test` -------------
# Nothing is downloaded from outside Debian's archive: Playwright drives the stock firefox-esr over
# WebDriver BiDi; WebKitGTK's own WebDriver (WebKitWebDriver) drives its MiniBrowser under Xvfb.
if [ -x /usr/lib/firefox-esr/firefox-esr ]; then
  say "firefox-esr already present ($(/usr/lib/firefox-esr/firefox-esr --version 2>/dev/null | head -n1))"
else
  have apt-get || die "firefox-esr is missing and apt-get is not available: install Firefox ESR by hand (FIREFOX_BIN)"
  say "installing firefox-esr (Debian package; Playwright's firefox project)"
  apt_install firefox-esr
fi
if have WebKitWebDriver && ls /usr/lib/*/webkit2gtk-4.1/MiniBrowser >/dev/null 2>&1; then
  say "webkit2gtk-driver already present (WebKitWebDriver, MiniBrowser)"
else
  have apt-get || die "WebKitWebDriver is missing and apt-get is not available: install webkit2gtk-driver by hand"
  say "installing webkit2gtk-driver (Debian package; WebKitWebDriver and MiniBrowser for the WebKit run)"
  apt_install webkit2gtk-driver
fi
for pkg in xvfb xauth; do
  bin=$([ "$pkg" = xvfb ] && echo xvfb-run || echo xauth)
  if have "$bin"; then
    say "$pkg already present"
  else
    have apt-get || die "$bin is missing and apt-get is not available: install $pkg by hand"
    say "installing $pkg (Debian package; MiniBrowser has no headless mode, it runs under Xvfb)"
    apt_install "$pkg"
  fi
done

# --- openssl (the https spec makes a self-signed certificate with it) ----------------------------
if have openssl; then
  say "openssl already present"
else
  have apt-get || die "openssl is missing and apt-get is not available: install it by hand"
  say "installing openssl (Debian package)"
  apt_install openssl
fi

# --- PostgreSQL (Debian package) -----------------------------------------------------------------
# The server tests of the PostgreSQL store (server/tests/cluster.rs) and `make cluster` run
# initdb/pg_ctl from /usr/lib/postgresql/<version>/bin in a temporary directory of their own; the
# package's own cluster is not used.
if ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
  say "postgresql already present ($(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n1))"
else
  have apt-get || die "PostgreSQL is missing and apt-get is not available: install PostgreSQL 13+ (initdb, pg_ctl) and set IBEXDB_PG_BIN to its bin directory"
  say "installing postgresql (Debian package; the tests run their own throwaway server)"
  apt_install postgresql
fi
if [ "$(id -u)" -eq 0 ] && ! id postgres >/dev/null 2>&1; then
  die "running as root but there is no user postgres to run the test PostgreSQL as (the postgresql package creates it)"
fi

# --- npm devDependencies -------------------------------------------------------------------------
have node || die "node not found (Node 20+ needed)"
have npm || die "npm not found"
if [ ! -d node_modules ] || [ ! -f node_modules/.package-lock.json ]; then
  say "installing npm packages (npm ci: node_modules is missing)"
  npm ci --no-audit --no-fund </dev/null
elif [ package-lock.json -nt node_modules/.package-lock.json ]; then
  say "installing npm packages (npm ci: package-lock.json is newer than node_modules)"
  npm ci --no-audit --no-fund </dev/null
else
  say "npm packages already present"
fi

# Sanity checks for the two things that bit us before (DESIGN.md section 11).
if ! "${ROOT}/node_modules/binaryen/bin/wasm-opt" --version >/dev/null 2>&1; then
  die "node_modules/binaryen/bin/wasm-opt does not run; try: rm -rf node_modules && npm ci"
fi
say "setup done"
