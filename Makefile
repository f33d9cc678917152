# Toeplitz Lab: two commands on a fresh machine.
#   make run   create .venv, install requirements.txt, start the app
#   make test  the same, plus the test dependencies, then ruff and the whole suite (as CI)
#   make quick the suite without its slow tier (pytest -m "not slow": browser, torchrun,
#              training and timing runs, and every test over half a second alone:
#              tests/slow_cases.txt), for the edit-test loop: about 75 s here
#   make checkpoints  retrain the shipped example models, one after another, on the CPU
VENV    ?= .venv
PYTHON  := $(VENV)/bin/python
PORT    ?= 8501

.PHONY: run test quick lint bench checkpoints lesson-measurements clean

$(PYTHON):
	python3 -m venv $(VENV)
	$(PYTHON) -m pip install --quiet --upgrade pip

$(VENV)/.app-installed: requirements.txt | $(PYTHON)
	$(PYTHON) -m pip install --quiet -r requirements.txt
	touch $@

$(VENV)/.dev-installed: requirements.txt requirements-dev.txt | $(PYTHON)
	$(PYTHON) -m pip install --quiet -r requirements-dev.txt
	touch $(VENV)/.app-installed $@

# The pages' imports (torch, plotly, tnn_core) are paid when the server starts, not by its
# first visitor (a cold Decomposition opens in about 3 s instead of 4.5: docs/benchmarks.md).
run: $(VENV)/.app-installed
	$(PYTHON) -c "import pages._ui.checkpoint_views, pages._ui.charts, pages._ui.cell_picker, pages.figures; from streamlit.web.cli import main; main()" \
		run app.py --server.port $(PORT) --server.fileWatcherType none

test: $(VENV)/.dev-installed
	$(PYTHON) -m ruff check .
	$(PYTHON) -m pytest

quick: $(VENV)/.dev-installed
	$(PYTHON) -m pytest -m "not slow"

lint: $(VENV)/.dev-installed
	$(PYTHON) -m ruff check .

bench: $(VENV)/.app-installed
	$(PYTHON) -m tnn_core.bench

# The exact commands behind checkpoints/*.safetensors (see checkpoints/README.md).
# Sequential on purpose: each uses 2 CPU threads, a few minutes on a 2-core machine.
TRAIN    = $(PYTHON) -m tnn_core.training --threads 2 --device cpu --seed 0
CHARLM   = --task charlm --seq-len 256 --batch-size 16 --dim 64 --layers 2 --steps 2000 \
           --lr 3e-3 --warmup 100 --eval-every 250 --eval-batches 8
LISTOPS  = --task listops --seq-len 128 --max-depth 2 --batch-size 32 --dim 64 --layers 2 \
           --steps 2000 --lr 3e-3 --warmup 100 --eval-every 250 --eval-batches 8 \
           --eval-batch-size 64
# TNN's Table 10: two charlm TNO models trained identically but for the decay λ.
TABLE10  = --task charlm --seq-len 128 --batch-size 16 --dim 64 --layers 2 --steps 600 \
           --lr 3e-3 --warmup 50 --eval-every 100 --eval-batches 8 --operator tno
DIGITS   = --task digits --size 8 --batch-size 32 --dim 64 --layers 2 --steps 1500 \
           --lr 3e-3 --warmup 100 --eval-every 250 --eval-batches 12

checkpoints: $(VENV)/.app-installed
	$(TRAIN) $(CHARLM) --operator tno --out checkpoints/charlm-tno.safetensors
	$(TRAIN) $(CHARLM) --operator fd --out checkpoints/charlm-fd.safetensors
	$(TRAIN) $(LISTOPS) --operator tno --out checkpoints/listops-tno.safetensors
	$(TRAIN) $(LISTOPS) --operator ski --rank 32 --band 9 --out checkpoints/listops-ski.safetensors
	$(TRAIN) $(LISTOPS) --operator fd --out checkpoints/listops-fd.safetensors
	$(TRAIN) $(DIGITS) --operator tno --out checkpoints/digits-tno.safetensors
	$(TRAIN) $(DIGITS) --operator ski --rank 16 --band 9 --out checkpoints/digits-ski.safetensors
	$(TRAIN) $(DIGITS) --operator fd --out checkpoints/digits-fd.safetensors
	$(TRAIN) $(TABLE10) --decay 0.99 --out checkpoints/charlm-tno-decay099.safetensors
	$(TRAIN) $(TABLE10) --decay 1.0 --out checkpoints/charlm-tno-nodecay.safetensors
	$(MAKE) lesson-measurements

# What the lessons show from the shipped checkpoints, kept beside them (keyed by SHA-256;
# docs/benchmarks.md, "Lesson measurements kept beside the checkpoints"): about 2 minutes.
lesson-measurements: $(VENV)/.app-installed
	$(PYTHON) -m tnn_core.lab.common.measurement_build --build

clean:
	rm -rf $(VENV) .pytest_cache tests/screenshots
