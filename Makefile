# ibexdb developer entry points.
#
#   make setup   install toolchain pieces (idempotent; see scripts/setup.sh)
#   make check   rustfmt, clippy (native + wasm32), wasm32 cargo check
#   make test    setup + check + cargo tests + wasm build + tsc + Playwright (Chromium, Firefox) + WebKitGTK
#                smoke + test-readme (what .ci/run runs)
#   make test-readme  run every command README.md and www/lib/README.md show; check their API lists
#   make test-node    the Node entry ibexdb/node (www/lib/node/) with node:test: memory, disk, sync via the real server
#   make wasm    release wasm build of bindings/wasm into pkg/ (always; pkg, app and demo rebuild it only when stale)
#   make tsc     type checks: tests/types (the public .d.ts), www/lib (checkJs, strict), www/bench (checkJs),
#                examples/app (checkJs, strict, public types only)
#   make pkg     the npm package ibexdb in dist/npm/ (www/lib + the wasm), packed as dist/ibexdb-<version>.tgz;
#                prints the sizes (tarball, wasm and JS: raw, brotli, gzip)
#   make app     the task board PWA (examples/app) built on the package into dist/app/
#   make demo    pkg + app, the sync server on 127.0.0.1:8787 and a static server; prints the URL
#   make cluster PostgreSQL and NODES (3) sync server nodes on it, on loopback ports; prints their URLs
#                (scripts/cluster.sh: PG_PORT, CLUSTER_DIR, NODE_ARGS); Ctrl-C stops everything
#   make bench-cluster  the sync load generator on the file store and on PostgreSQL with 1, 2, 3 nodes
#                (scripts/bench-cluster.sh; results in bench-results/sync-load-*.json)
#   make bench   setup + wasm + browser benchmark (BENCH_SIZES, BENCH_SUITES = core,writes,scaling,relational,
#                verify,dbx,fat,omgdb, BENCH_FAT_SIZES, BENCH_ENGINES, BENCH_ASSERT, PORT, BENCH_BROWSER =
#                chromium (default) | firefox; SKIP_WASM=1 skips the
#                wasm build); see docs/benchmarks.md
#   make serve   static server with COOP/COEP (and brotli/gzip) on http://127.0.0.1:$${PORT:-8080}/
#
# Steps print "--- <what>" before they run.

SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := test

# binaryen@132 from npm provides a wasm-opt that works (Debian's v108 breaks wasm-bindgen output at
# init, and wasm-pack's own download fails here). It must come first on PATH for wasm-pack.
export PATH := $(CURDIR)/node_modules/binaryen/bin:$(CURDIR)/node_modules/.bin:$(HOME)/.cargo/bin:$(PATH)

BINDINGS_TOML := bindings/wasm/Cargo.toml
step = @printf '\n--- %s\n' "$(1)"

.PHONY: setup check test test-rust test-readme test-node wasm tsc pkg app demo cluster bench-cluster browser-test bench serve clean-bench

setup:
	$(call step,setup: install missing tools (scripts/setup.sh))
	@bash scripts/setup.sh

check:
	$(call step,check: rustfmt (no changes made))
	cargo fmt --all --check
	$(call step,check: clippy native on all targets (warnings are errors))
	cargo clippy --workspace --all-targets -- -D warnings
	$(call step,check: clippy wasm32 lib targets of the core and the bindings (the native server is not built for wasm32; warnings are errors))
	cargo clippy -p ibexdb -p ibexdb-wasm --target wasm32-unknown-unknown -- -D warnings
	$(call step,check: core crate builds for wasm32-unknown-unknown)
	cargo check -p ibexdb --target wasm32-unknown-unknown

# Includes the server's PostgreSQL-store tests (server/tests/cluster.rs), which start PostgreSQL
# servers of their own from Debian's postgresql package (installed by setup).
test-rust:
	$(call step,test: cargo test --workspace --profile ci (release speed without LTO; the PostgreSQL-store tests start their own PostgreSQL))
	cargo test --workspace --profile ci
	@if [ "$$(uname -m)" = x86_64 ]; then \
	  printf '\n--- test: the core on i686 (32-bit pointers, as on wasm32: 14-byte inline names, 16-byte values)\n'; \
	  cargo test -p ibexdb --profile ci --target i686-unknown-linux-gnu; \
	else \
	  printf '\n--- test: the core on i686 skipped (not an x86_64 host)\n'; \
	fi

# Release wasm build of the bindings crate into pkg/ (pkg/ibexdb.js + pkg/ibexdb_bg.wasm).
# `make wasm` always rebuilds: it is what `make test` and `make bench` run, so CI and a benchmark
# never use a pkg/ that an input missing from WASM_INPUTS (a new toolchain, RUSTFLAGS) left stale.
# `make pkg`, `make app` and `make demo` rebuild only when an input is newer than the wasm (the
# file target below): a second `make demo` starts without a wasm-pack build. SKIP_WASM=1 skips the
# forced build (e.g. `make bench SKIP_WASM=1` to benchmark the SQLite engines while the bindings
# don't build).
WASM_OUT := pkg/ibexdb_bg.wasm
WASM_INPUTS := $(shell find src bindings/wasm/src -name '*.rs') Cargo.toml Cargo.lock $(BINDINGS_TOML) \
  $(wildcard node_modules/binaryen/package.json)
# A failed build removes the wasm, so that the next make does not take a half-built one as current.
wasm_pack = printf '\n--- wasm: wasm-pack release build of bindings/wasm -> pkg/ (wasm-opt: %s)\n' "$$(command -v wasm-opt)"; \
  wasm-pack build bindings/wasm --target web --release --out-dir ../../pkg --out-name ibexdb || { rm -f $(WASM_OUT); exit 1; }

wasm:
	@if [ "$(SKIP_WASM)" = 1 ]; then \
	  printf '\n--- wasm: skipped (SKIP_WASM=1; pkg/ is used as it is)\n'; \
	else \
	  $(wasm_pack); \
	fi

# A fresh clone's `make pkg` (README's first command) has no node_modules yet, and wasm-pack's own
# binaryen download fails here: the pinned npm packages first (npm ci, as setup does).
node_modules/binaryen/bin/wasm-opt:
	$(call step,npm ci: the pinned npm packages (binaryen's wasm-opt for the wasm build; node_modules is missing))
	npm ci --no-audit --no-fund </dev/null

$(WASM_OUT): $(WASM_INPUTS) | node_modules/binaryen/bin/wasm-opt
	@$(wasm_pack)

# Type checks (pkg/ must be built: the library is checked against the wasm glue's ibexdb.d.ts).
tsc:
	$(call step,tsc: the public types as an app uses them (tests/types))
	npx --no-install tsc --noEmit -p tests/types
	$(call step,tsc: the library's JavaScript with checkJs and strict (www/lib))
	npx --no-install tsc --noEmit -p tests/types/tsconfig.lib.json
	$(call step,tsc: the benchmark's JavaScript with checkJs (www/bench))
	npx --no-install tsc --noEmit -p www/bench
	$(call step,tsc: the task board PWA against the package's public types only (examples/app, checkJs, strict))
	npx --no-install tsc --noEmit -p tests/types/tsconfig.app.json

# The publishable npm package (scripts/build-pkg.mjs): www/lib/ + pkg/'s glue and wasm, with a
# package.json (exports, types, files, sideEffects), then `npm pack` into dist/.
pkg: $(WASM_OUT)
	$(call step,pkg: the npm package ibexdb in dist/npm/ and npm pack into dist/ (scripts/build-pkg.mjs))
	node scripts/build-pkg.mjs

# The task board PWA (examples/app/) on the package: app files and package under one versioned
# folder, a service worker that caches them (scripts/build-app.mjs builds the package folder itself).
app: $(WASM_OUT)
	$(call step,app: the task board PWA into dist/app/ (scripts/build-app.mjs))
	node scripts/build-app.mjs

# Try it: the app, the sync server (cargo run) and a plain static server (scripts/demo.mjs).
demo: $(WASM_OUT)
	$(call step,demo: build the app; start ibexdb-server and a static server (Ctrl-C stops both))
	node scripts/demo.mjs

cluster:
	$(call step,cluster: PostgreSQL and $${NODES:-3} ibexdb-server nodes on loopback (scripts/cluster.sh; Ctrl-C stops them))
	cargo build --release -p ibexdb-server
	bash scripts/cluster.sh

bench-cluster:
	$(call step,bench-cluster: ibexdb-load on files (1 node) and on PostgreSQL (1, 2, 3 nodes) (scripts/bench-cluster.sh))
	cargo build --release -p ibexdb-server
	bash scripts/bench-cluster.sh

browser-test:
	$(call step,browser tests: build the sync server the sync spec starts (cargo build --release -p ibexdb-server))
	cargo build --release -p ibexdb-server
	$(call step,browser tests: Playwright in Debian Chromium (tests/browser))
	npx --no-install playwright test --project=chromium
	$(call step,browser tests: Playwright in Debian Firefox ESR over WebDriver BiDi (the shared specs: playwright.config.ts FIREFOX_SPECS))
	npx --no-install playwright test --project=firefox
	$(call step,browser tests: WebKitGTK (MiniBrowser under Xvfb, WebKitWebDriver): probe, then the shared specs (Playwright project webkit: scripts/webkit/run.mjs))
	xvfb-run -a node scripts/webkit/run.mjs

# The READMEs kept true: their API lists name every Database member and open() option of
# ibexdb.d.ts, and every command they show runs (tests/readme/: quick options, ports of its own,
# servers checked to serve and to stop cleanly; the excused ones listed with their reasons).
test-readme:
	$(call step,test: the READMEs' API lists against www/lib/ibexdb.d.ts (tests/readme/api-lists.mjs))
	node tests/readme/api-lists.mjs
	$(call step,test: build the sync server (the README runs target/release/ibexdb-server))
	cargo build --release -p ibexdb-server
	$(call step,test: every command README.md and www/lib/README.md show (tests/readme/commands.mjs))
	node tests/readme/commands.mjs

# The Node entry (www/lib/node/: the wasm engine in Node, memory and disk storage, sync over `ws`),
# tested with node's own runner; the sync test starts the release server on an ephemeral port.
test-node: $(WASM_OUT)
	$(call step,test-node: build the sync server the Node sync test starts (cargo build --release -p ibexdb-server))
	cargo build --release -p ibexdb-server
	$(call step,test-node: node --test tests/node/ (Node $$(node --version)))
	node --test tests/node/

test: setup check test-rust wasm tsc browser-test test-node test-readme
	$(call step,test: all passed)

# Browser benchmark (scripts/bench.mjs). Exit code 3 from the runner means "the browser benchmark
# cannot run here" (no Chromium, page failed to load): then fall back to native `cargo bench`.
# Any other failure (an engine error, a BENCH_ASSERT ceiling) fails the target.
bench: setup wasm
	$(call step,bench: build the sync server the sync-latency row starts (cargo build --release -p ibexdb-server))
	cargo build --release -p ibexdb-server
	$(call step,bench: browser benchmark (sizes=$${BENCH_SIZES:-100000} engines=$${BENCH_ENGINES:-all available}))
	@rc=0; node scripts/bench.mjs || rc=$$?; \
	if [ $$rc -eq 3 ]; then \
	  printf '\n--- bench: browser benchmark cannot run here; falling back to native cargo bench\n'; \
	  cargo bench --workspace; \
	elif [ $$rc -ne 0 ]; then exit $$rc; fi

serve:
	$(call step,serve: static server with COOP/COEP at http://127.0.0.1:$${PORT:-8080}/ (Ctrl-C to stop))
	node scripts/serve.mjs

clean-bench:
	$(call step,clean-bench: remove bench-results/ test-results/)
	rm -rf bench-results test-results
