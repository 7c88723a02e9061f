# The two README commands: `make demo` and `make test`. Both create .venv first.
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1

.PHONY: venv demo test lint browser clean

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	# torch first, from the local CPU build: otherwise pip pulls a multi-GB CUDA build
	$(PIP) install -q torch==2.13.0
	# the RAG framework extras too: tests/integrations drives each adapter through its framework
	$(PIP) install -q -e ".[torch,milvus,test,langchain,llamaindex,haystack,mcp]"
	touch $@

venv: $(VENV)/.installed

demo: venv
	$(VENV)/bin/hanrag demo examples/corpus --config examples/hanrag.toml

# Debian's chromium + chromedriver drive the web inspector's browser test
browser:
	@command -v chromium >/dev/null && command -v chromedriver >/dev/null || \
	  { (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null) || \
	    echo "warning: could not install chromium; the browser test will be skipped"; }

test: venv browser
	$(VENV)/bin/ruff check hanrag tests benchmarks
	$(PY) -m pytest -q

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
