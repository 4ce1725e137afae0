# acframe: `make run` trains CartPole with IMPALA, `make test` runs the test suite.
# Both create the virtual environment .venv and install acframe into it first.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
CONFIG ?= cartpole_impala.py

.PHONY: install run test bench docs clean

$(VENV)/.installed: setup.py
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip setuptools wheel
	# the pinned CPU wheel (a local file on these machines); an unpinned torch would pull gigabytes of CUDA packages
	$(PY) -m pip install -q $(if $(wildcard /opt/wheels),--find-links /opt/wheels) torch==2.13.0
	$(PY) -m pip install -q -e ".[test,ray,box2d,atari,envpool,video,onnx,tune,mujoco,wandb,mlflow,pettingzoo]"
	touch $@

install: $(VENV)/.installed

run: install
	$(VENV)/bin/acframe -c $(CONFIG)

# the suite on two worker processes (pytest-xdist; the machines this runs on have 2 cores), no test longer than 10 minutes
test: install
	$(PY) -m pytest -q -n 2 --timeout 600 tests

bench: install
	$(PY) bench/run_all.py

docs: install
	$(PY) -m acframe.config.reference --write docs

clean:
	rm -rf $(VENV) build *.egg-info
