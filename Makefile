# The two README commands: `make demo` and `make test`. Both create .venv first.
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1

.PHONY: venv demo test lint browser clean dist wheel-check

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	# torch first, from the local CPU build: otherwise pip pulls a multi-GB CUDA build
	$(PIP) install -q torch==2.13.0
	# the RAG framework extras too: tests/integrations drives each adapter through its framework.
	# editable_mode=compat: the checkout on sys.path through a .pth line, as a plain install would start; the
	# default mode's import hook costs every interpreter ~10 ms (a `hanrag search` a server answers takes ~40)
	$(PIP) install -q -e ".[torch,milvus,test,langchain,llamaindex,haystack,mcp]" --config-settings editable_mode=compat
	touch $@

venv: $(VENV)/.installed

demo: venv
	$(VENV)/bin/hanrag demo

# Debian's chromium + chromedriver drive the web inspector's browser test; fonts-noto-cjk lets it render the
# Korean and Chinese it checks (without a CJK font every glyph is an empty box). Missing and not installable
# is an error: `make test` would otherwise pass without the browser test. HANRAG_SKIP_BROWSER=1 skips it openly.
browser:
	@if [ -n "$$HANRAG_SKIP_BROWSER" ]; then echo "warning: HANRAG_SKIP_BROWSER is set: the browser test is skipped"; \
	elif command -v chromium >/dev/null && command -v chromedriver >/dev/null && fc-list :lang=ko | grep -q .; then :; \
	else (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver \
	        fonts-noto-cjk >/dev/null) || \
	  { echo "error: could not install chromium, chromium-driver and fonts-noto-cjk for the browser test" \
	         "(run as root, or set HANRAG_SKIP_BROWSER=1 to skip it)" >&2; exit 1; }; fi

# HANRAG_REQUIRE_BROWSER: a browser test that cannot run fails instead of skipping
test: venv browser
	$(VENV)/bin/ruff check hanrag tests benchmarks fixtures
	HANRAG_REQUIRE_BROWSER=$$([ -n "$$HANRAG_SKIP_BROWSER" ] || echo 1) $(PY) -m pytest -q

# the release artefacts: a wheel and an sdist that twine accepts
dist: venv
	rm -rf dist
	$(PIP) install -q "build>=1.2,<2" "twine>=5,<7"
	$(PY) -m build --outdir dist . > dist.log 2>&1 || { cat dist.log; exit 1; }
	@if grep -i "deprecat" dist.log; then echo "error: the build printed deprecation warnings" >&2; exit 1; fi
	$(VENV)/bin/twine check --strict dist/*

# what a user gets from pip: the wheel in a fresh environment outside the checkout, run from another folder
WHEEL_ENV ?= /tmp/hanrag-wheel-check
wheel-check: dist
	rm -rf $(WHEEL_ENV) && mkdir -p $(WHEEL_ENV)
	python3 -m venv $(WHEEL_ENV)/venv
	$(WHEEL_ENV)/venv/bin/pip install -q dist/hanrag-*.whl
	cd $(WHEEL_ENV) && venv/bin/hanrag --version
	cd $(WHEEL_ENV) && venv/bin/hanrag demo --top-k 1 > demo.log && tail -5 demo.log
	cd $(WHEEL_ENV) && venv/bin/hanrag search index/demo "갑목 인월 용신" --top-k 3 | tee search.log \
	  && grep -q "甲木" search.log
	# the bundled learned ranker (package data) loads from the installed wheel
	cd $(WHEEL_ENV) && HANRAG_SEARCH__RANKER=lambdamart venv/bin/hanrag search index/demo "갑목 인월 용신" --top-k 3 \
	  --explain > ranker.log && grep -q "bundled:lambdamart" ranker.log

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache dist dist.log
