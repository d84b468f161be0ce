# Quick start: `make demo` (install + check the reference design), `make test` (install + tests).
PYTHON ?= python3
PIP ?= $(PYTHON) -m pip

.PHONY: install system-deps demo test bench images calibrate fuzz

system-deps:
	@# Graphviz's `dot` comes from Debian's package (needed by `astral render`).
	@command -v dot >/dev/null 2>&1 || { \
	  if command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq graphviz >/dev/null; \
	  else echo "note: install Graphviz (apt-get install graphviz) for rendering"; fi; }

install: system-deps
	$(PIP) install -q -e '.[test]'

demo: install
	astral check examples/astral.astral

test: install
	$(PYTHON) -m pytest

# The long fuzz campaign: 100,000 inputs across the entry points, a report of the classes of
# failure found (their shortest inputs in fuzz-findings/); `make test` runs 280 of them.
FUZZ_INPUTS ?= 100000
fuzz: install
	$(PYTHON) tests/fuzzing.py --inputs $(FUZZ_INPUTS)

bench: install
	for b in benchmarks/bench_*.py; do echo "== $$b"; $(PYTHON) $$b || exit 1; done

# Refit Seer's constants on the calibration runs and write the shipped fit (docs/seer.md).
calibrate:
	$(PYTHON) -m astral_dsl.seer.calibrate --write

# The README's pictures of the reference design (PNG), drawn by `astral render`.
IMAGES_DPI ?= 110
images: system-deps
	@mkdir -p docs/images
	$(PYTHON) -m astral_dsl.cli render examples/astral.astral -o docs/images/astral-cluster.png --view cluster --dpi $(IMAGES_DPI)
	$(PYTHON) -m astral_dsl.cli render examples/astral.astral -o docs/images/astral-power.png --view power --dpi $(IMAGES_DPI)
	$(PYTHON) -m astral_dsl.cli render examples/astral.astral -o docs/images/astral-cooling.png --view cooling --dpi $(IMAGES_DPI)
	$(PYTHON) -m astral_dsl.cli forecast examples/astral.astral --plot docs/images/seer_llama405b.png >/dev/null
	$(PYTHON) -m astral_dsl.cli sweep examples/explore.astral --grid job_gpus=256,512,1024,2048,4096 --grid tp=2,4,8 --grid pp=1,2,4,8 --job llama70b --plot docs/images/sweep-pareto.png --x min:job_gpus --y tokens_per_s >/dev/null; test $$? -le 1
