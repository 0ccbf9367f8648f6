# fetchd — make run / make test / make bench. Each target installs what it needs and is missing.

SWIFT     ?= swift
SUDO      := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
APT_DEPS  := libcurl4-openssl-dev libssl-dev libsqlite3-dev zlib1g-dev libpq-dev pkg-config
PY_DEPS   := pytest standardwebhooks openapi-python-client==0.29.1 selenium schemathesis 'moto[server]==5.2.1' boto3 kubernetes-validate pyyaml aiohttp-tus==1.1.0 tuspy==1.1.0
BIN       := .build/debug/fetchd
## the generated Swift client's build (Tests/clients/swift): outside the clone, since building
## swift-openapi-generator takes minutes and a new clone on the same machine can reuse it
SWIFT_CLIENT_BUILD ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/fetchd/swift-client-build

.PHONY: deps py-deps build release run test test-unit test-e2e swift-client openapi-check lint clean fuzz

## deps: install the system packages the build links against (Debian/Ubuntu)
deps:
	@missing=""; for p in $(APT_DEPS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		$(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing >/dev/null; \
	fi

## py-deps: the end-to-end suite's Python packages (pytest, the reference webhook verifier, the
## Python client generator that test_generated_clients.py checks openapi.yaml with, Selenium for
## the console's browser tests, which drive Debian's chromium through its chromedriver, and schemathesis,
## which fuzzes every operation of openapi.yaml for 5xx answers, and moto's S3 server with boto3 for the
## object-storage tests (Tests/e2e/s3_support.py patches moto 5.2.1's internals, hence the pin), and
## kubernetes-validate, which test_deploy.py checks deploy/kubernetes with against the Kubernetes schemas, and
## aiohttp-tus, the tus server the tus uploads go to (tuspy, the reference client, is the benchmark's peer)
py-deps:
	@python3 -c 'import pytest, standardwebhooks, openapi_python_client, selenium, schemathesis, moto.server, boto3, kubernetes_validate, yaml, aiohttp_tus, tusclient' 2>/dev/null || python3 -m pip install -q $(PY_DEPS)

build: deps
	$(SWIFT) build --product fetchd

release: deps
	$(SWIFT) build -c release --product fetchd

## run: start fetchd with its embedded defaults (127.0.0.1:8080, ./fetchd-data, ./downloads)
run: release
	.build/release/fetchd

## test: unit tests of every module, then the end-to-end suite against the built binary
test: test-unit test-e2e

## test-unit: every module's tests, then the store's again against a throwaway PostgreSQL server
## (Debian package postgresql; scripts/postgres/test-server.sh), stopped however they end. Apart,
## because their waits on the server hold threads of the test pool that the transfer tests'
## timeouts need on two loaded cores.
test-unit: deps
	@$(MAKE) --no-print-directory deps APT_DEPS="postgresql"
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build
	@url=$$(scripts/postgres/test-server.sh start) && \
		FETCHD_TEST_DATABASE_URL="$$url" $(SWIFT) test --skip-build --filter 'StoreConformanceTests|PostgresStoreTests'; \
		status=$$?; scripts/postgres/test-server.sh stop; exit $$status

## the e2e suite checks a /metrics scrape with promtool (Debian package prometheus), builds
## network namespaces with ip (iproute2) for the live SSRF tests, streams events through nginx and
## haproxy (test_reverse_proxy.py), runs HTTPS origins (nginx-light, certificates by openssl)
## and proxies (tinyproxy, microsocks) for the TLS and proxy tests, the console in a headless
## chromium (test_console.py), fetchd on PostgreSQL, and checks the package's units with
## systemd-analyze (systemd) and its man page with man (man-db) (test_package.py)
test-e2e: build py-deps swift-client
	@$(MAKE) --no-print-directory deps APT_DEPS="prometheus iproute2 nginx-light haproxy openssl tinyproxy microsocks postgresql chromium chromium-driver systemd man-db vsftpd openssh-server"
	@url=$$(scripts/postgres/test-server.sh start) && \
		FETCHD_TEST_DATABASE_URL="$$url" FETCHD_BIN=$(BIN) FETCHD_SWIFT_CLIENT_BUILD=$(SWIFT_CLIENT_BUILD) python3 -m pytest -q Tests/e2e; \
		status=$$?; scripts/postgres/test-server.sh stop; exit $$status

## swift-client: the client swift-openapi-generator makes from openapi.yaml, and the program
## that drives fetchd through it (Tests/clients/swift; run by Tests/e2e/test_generated_clients.py)
swift-client: deps
	$(SWIFT) build --package-path Tests/clients/swift --scratch-path $(SWIFT_CLIENT_BUILD) --product FetchdClientCheck

## fuzz: libFuzzer (with AddressSanitizer) for FUZZ_SECONDS each over the HTTP request parser,
## then over the JSON parser that reads every request body, checked against Foundation's
## JSONSerialization, and the XML reader of S3's answers, checked against Foundation's XMLParser;
## fuzz-RequestParser, fuzz-JSONParser or fuzz-XMLReader runs one. New inputs go to
## .build-fuzz/corpus/<parser>, crashes to .build-fuzz/<parser>-crash-*, inputs that take over
## 10 s (hangs) to .build-fuzz/<parser>-timeout-*; seeds stay in Fuzz/corpus/<parser>
FUZZ_SECONDS ?= 300
FUZZ_PARSERS := RequestParser JSONParser XMLReader
# XMLParser, the XML reader's reference, leaks some 600 bytes for each input it finds an error in
# (Fuzz/leaks.supp keeps that out of the findings): ten minutes grow to ~3 GB.
FUZZ_OPTIONS_XMLReader := -rss_limit_mb=16384
fuzz: $(FUZZ_PARSERS:%=fuzz-%)
.PHONY: $(FUZZ_PARSERS:%=fuzz-%)
$(FUZZ_PARSERS:%=fuzz-%): fuzz-%:
	@# --sanitize fuzzer makes SwiftPM leave main to libFuzzer; the driver keeps only the last
	@# -sanitize= it is given, so both sanitizers go in one flag after it.
	$(SWIFT) build -c release --scratch-path .build-fuzz --sanitize fuzzer -Xswiftc -sanitize=fuzzer,address \
		-Xswiftc -DFUZZING --product $*Fuzz
	mkdir -p .build-fuzz/corpus/$*
	LSAN_OPTIONS=suppressions=Fuzz/leaks.supp .build-fuzz/release/$*Fuzz -max_total_time=$(FUZZ_SECONDS) -max_len=4096 -timeout=10 -print_final_stats=1 $(FUZZ_OPTIONS_$*) \
		-dict=Fuzz/$*.dict -artifact_prefix=.build-fuzz/$*- .build-fuzz/corpus/$* Fuzz/corpus/$*

## bench: fetchd beside curl, aria2 and rclone on loopback, one table (Benchmarks/README.md, docs/benchmarks.md); BENCH_ARGS passes options
## bench-quick: the same scaled down, in under 3 minutes
.PHONY: bench bench-quick bench-deps
BENCH_APT := nginx-light aria2 wrk curl openssl rclone vsftpd openssh-server
## the objects scenario runs moto as the end-to-end tests do (Tests/e2e/s3_support.py, which imports
## e2e_support.py and so standardwebhooks) and checks each object with boto3; the uploads scenario sends
## to aiohttp-tus (Tests/e2e/tus_server.py) beside tuspy
BENCH_PY  := 'moto[server]==5.2.1' boto3 standardwebhooks aiohttp-tus==1.1.0 tuspy==1.1.0
bench-deps:
	@$(MAKE) --no-print-directory deps APT_DEPS="$(BENCH_APT)"
	@python3 -c 'import moto.server, boto3, standardwebhooks, aiohttp_tus, tusclient' 2>/dev/null || python3 -m pip install -q $(BENCH_PY)

bench: release bench-deps
	python3 Benchmarks/run.py --fetchd .build/release/fetchd $(BENCH_ARGS)

bench-quick: release bench-deps
	python3 Benchmarks/run.py --quick --fetchd .build/release/fetchd $(BENCH_ARGS)

## container-check: the Dockerfile's runtime image without Docker (needs root): a release build as the
## build stage does it, the final stage debootstrapped into .build-container/rootfs (cached), fetchd run
## there by chroot as uid 10001 through a loopback smoke test (scripts/container/check.sh)
.PHONY: container-check
container-check: deps
	$(SUDO) env SWIFT="$$(command -v $(SWIFT))" scripts/container/check.sh

## code-layout: Sources/fetchd/fetchd.order, the order release builds lay fetchd's functions out
## in, from the calls the quick bench makes (needs root: it counts them with uprobes; generate.py)
.PHONY: code-layout
code-layout: bench-deps
	$(SUDO) env PATH="$$PATH" python3 scripts/code-layout/generate.py

## package: fetchd_<version>_<arch>.deb in .build-package (scripts/package/build-deb.sh): the release
## binary as container-check builds it, the hardened unit and socket of deploy/debian, and fetchd.env
## and fetchd(8) generated from the settings table
## package-check: the .deb through lintian, then installed into container-check's Debian root and
## its unit's ExecStart run there as its user until a download completes (needs root)
.PHONY: package package-check
package: deps
	@$(MAKE) --no-print-directory deps APT_DEPS="dpkg-dev"
	SWIFT="$(SWIFT)" scripts/package/build-deb.sh

package-check: package
	@$(MAKE) --no-print-directory deps APT_DEPS="lintian debootstrap systemd"
	$(SUDO) scripts/package/check.py

## console: regenerate the console's embedded files (Sources/DownloadService/API/ConsoleFiles.generated.swift)
## from Resources/console; test_console.py fails while they differ
.PHONY: console console-screenshot
console:
	python3 scripts/console/generate.py

## docs: regenerate docs/configuration.md from the built binary's settings table (the one
## `fetchd --help` prints; scripts/docs/configuration.py); Tests/e2e/test_docs.py fails while they differ
.PHONY: docs
docs: build
	python3 scripts/docs/configuration.py --fetchd $(BIN)

## console-screenshot: the README's docs/console.png, taken by test_console.py in the real browser
console-screenshot: build py-deps
	@$(MAKE) --no-print-directory deps APT_DEPS="chromium chromium-driver"
	FETCHD_BIN=$(BIN) FETCHD_CONSOLE_SCREENSHOT=$(CURDIR)/docs/console.png python3 -m pytest -q Tests/e2e/test_console.py -k screenshot

openapi-check:
	python3 -c 'import yaml; from openapi_spec_validator import validate; validate(yaml.safe_load(open("openapi.yaml")))'

clean:
	rm -rf .build
