# Toeplitz Lab: two commands on a fresh machine.
#   make run   create .venv, install requirements.txt, start the app
#   make test  the same, plus the test dependencies, then the whole suite
VENV    ?= .venv
PYTHON  := $(VENV)/bin/python
PORT    ?= 8501

.PHONY: run test lint bench clean

$(PYTHON):
	python3 -m venv $(VENV)
	$(PYTHON) -m pip install --quiet --upgrade pip

$(VENV)/.app-installed: requirements.txt | $(PYTHON)
	$(PYTHON) -m pip install --quiet -r requirements.txt
	touch $@

$(VENV)/.dev-installed: requirements.txt requirements-dev.txt | $(PYTHON)
	$(PYTHON) -m pip install --quiet -r requirements-dev.txt
	touch $(VENV)/.app-installed $@

run: $(VENV)/.app-installed
	$(PYTHON) -m streamlit run app.py --server.port $(PORT) --server.fileWatcherType none

test: $(VENV)/.dev-installed
	$(PYTHON) -m ruff check .
	$(PYTHON) -m pytest

lint: $(VENV)/.dev-installed
	$(PYTHON) -m ruff check .

bench: $(VENV)/.app-installed
	$(PYTHON) -m tnn_core.bench

clean:
	rm -rf $(VENV) .pytest_cache tests/screenshots
