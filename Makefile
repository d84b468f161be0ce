# Quick start: `make demo` (install + check the reference design), `make test` (install + tests).
PYTHON ?= python3
PIP ?= $(PYTHON) -m pip

.PHONY: install system-deps demo test bench bench-diagnose images calibrate calibrate-exact fuzz fuzz-deep fuzz-traces report report-screenshot

system-deps:
	@# Graphviz's `dot` comes from Debian's package (needed by `astral render` and `astral report`).
	@command -v dot >/dev/null 2>&1 || { \
	  if command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq graphviz >/dev/null; \
	  else echo "note: install Graphviz (apt-get install graphviz) for rendering"; fi; }
	@# Debian's Chromium runs the browser tests of `astral report` (headless) and takes the screenshot.
	@command -v chromium >/dev/null 2>&1 || { \
	  if command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	  else echo "note: install Chromium (apt-get install chromium) for the browser tests of astral report"; fi; }

# pip runs only when this checkout's editable install is not current (.ci/installed.py: the
# version, requirements and scripts of pyproject.toml, each requirement installed and allowed):
# pip alone takes ~7 s of CPU to find that nothing changed.
install: system-deps
	@$(PYTHON) .ci/installed.py test || $(PIP) install -q -e '.[test]'

demo: install
	astral check examples/astral.astral

test: install
	$(PYTHON) -m pytest

# The long fuzz campaign: 100,000 inputs across the entry points, a report per target and of
# the classes of failure found (their shortest inputs in fuzz-findings/); `make test` runs 280
# of the front end's and a few dozen of the deeper ones. FUZZ_TARGETS=deep (or a comma list)
# chooses targets; `make fuzz-deep` is 20,000 inputs of the deeper ones (forecasts where Seer's
# rules choose, margins, diff between revisions, rank logs and traces, language-server edits
# and cancels: tests/fuzz_deep.py).
FUZZ_INPUTS ?= 100000
FUZZ_TARGETS ?= all
fuzz: install
	$(PYTHON) tests/fuzzing.py --inputs $(FUZZ_INPUTS) $(if $(filter all,$(FUZZ_TARGETS)),,--targets $(FUZZ_TARGETS))

fuzz-deep: install
	$(PYTHON) tests/fuzzing.py --inputs 20000 --targets deep

# Mutated profiler traces read by the trace reader: no exception, the same plain and gzipped, the
# same by the schema decode and the full parse (tests/fuzz_traces.py).
fuzz-traces: install
	$(PYTHON) tests/fuzz_traces.py --inputs 5000

bench: install
	for b in benchmarks/bench_*.py; do [ $$b = benchmarks/bench_diagnose.py ] && continue; \
	  echo "== $$b"; $(PYTHON) $$b || exit 1; done
	@echo "== benchmarks/bench_diagnose.py (a quick sample: make bench-diagnose runs the proof)"
	$(PYTHON) benchmarks/bench_diagnose.py --per-kind 2 --none 4

# The proof of `astral diagnose` (docs/diagnose.md): 140 random injections of 7 kinds and 150
# fault-free runs on the single-pod example's job, clocks drifting up to 10 ppm, every other run
# logged with Megatron-LM's timers, then the speed of each input format (CPU-heavy: the 290
# trials took 669 + 37 s of CPU, 21.3 minutes on two cores shared with other jobs, at stop 61:
# README).
bench-diagnose: install
	$(PYTHON) benchmarks/bench_diagnose.py

# Refit Seer's constants on the calibration runs tables and write the shipped fit, then the
# docs' tables generated from it (docs/seer.md, "Calibration"; docs/runs.md).
CALIBRATION = astral_dsl/seer/calibration
# first, that the fit's Jacobian sees every row each constant moves (runs/fit.py `uses`, ~35 s)
calibrate:
	ASTRAL_FULL_USES=1 $(PYTHON) -m pytest -q -p no:cacheprovider tests/accuracy/test_uses.py
	$(PYTHON) -m astral_dsl.cli calibrate $(CALIBRATION)/a100.csv $(CALIBRATION)/modern.csv \
	  --by-source a100 -o $(CALIBRATION)/fit.json --docs docs/seer.md

# The same fit with every leave-out refit exact (a whole fit without each configuration, and
# without each A100 paper): fit-exact.json, whose figures docs/seer.md's `-exact` tables show and
# issue 21's targets are judged on. About 65 min of CPU, in JOBS processes (default: one per
# core); run after `make calibrate` (a test checks that the two are of one fit).
JOBS ?=
calibrate-exact:
	$(PYTHON) -m astral_dsl.cli calibrate $(CALIBRATION)/a100.csv $(CALIBRATION)/modern.csv \
	  --by-source a100 --leave-out exact $(if $(JOBS),--jobs $(JOBS)) \
	  -o $(CALIBRATION)/fit-exact.json --docs docs/seer.md

# The README's pictures of the reference design (PNG), drawn by `astral render`.
IMAGES_DPI ?= 110
TMPDIR_IMAGES ?= /tmp
images: system-deps
	@mkdir -p docs/images
	$(PYTHON) -m astral_dsl.cli render examples/astral.astral -o docs/images/astral-cluster.png --view cluster --dpi $(IMAGES_DPI)
	$(PYTHON) -m astral_dsl.cli render examples/astral.astral -o docs/images/astral-power.png --view power --dpi $(IMAGES_DPI)
	$(PYTHON) -m astral_dsl.cli render examples/astral.astral -o docs/images/astral-cooling.png --view cooling --dpi $(IMAGES_DPI)
	$(PYTHON) -m astral_dsl.cli forecast examples/astral.astral --plot docs/images/seer_llama405b.png >/dev/null
	@# a diagnosed suspect: a drill's observed data of the single-pod job with a NIC port at half rate
	$(PYTHON) -m astral_dsl.cli synth examples/single_pod.astral -o $(TMPDIR_IMAGES)/run7.csv --fault nic_port --part 'Lab.pods[0].rows[3].racks[1].hosts[1].nics[4].port[b]' --severity 0.5 --seed 5 >/dev/null
	$(PYTHON) -m astral_dsl.cli diagnose examples/single_pod.astral --observed $(TMPDIR_IMAGES)/run7.csv -o $(TMPDIR_IMAGES)/diagnosis.json >/dev/null; test $$? -eq 1
	$(PYTHON) -m astral_dsl.cli render examples/single_pod.astral --view rack --name 'Lab.pods[0].rows[3].racks[1]' --highlight $(TMPDIR_IMAGES)/diagnosis.json -o docs/images/diagnose-rack.png --dpi $(IMAGES_DPI)
	$(PYTHON) -m astral_dsl.cli sweep examples/explore.astral --grid job_gpus=256,512,1024,2048,4096 --grid tp=2,4,8 --grid pp=1,2,4,8 --job llama70b --plot docs/images/sweep-pareto.png --x min:job_gpus --y tokens_per_s >/dev/null; test $$? -le 1

# The review page of the reference design (`astral report`), and its screenshot for the README.
REPORT ?= review.html
report: system-deps
	$(PYTHON) -m astral_dsl.cli report examples/astral.astral -o $(REPORT)
	@echo "open $(REPORT) in a browser"

# The README's screenshot of it: the top of the page in headless Chromium.
report-screenshot: report
	@mkdir -p docs/images
	profile=$$(mktemp -d) && chromium --headless --no-sandbox --disable-gpu --no-first-run \
	  --disable-background-networking --disable-component-update --disable-sync \
	  --hide-scrollbars --user-data-dir=$$profile --window-size=1400,2000 \
	  --screenshot=docs/images/astral-report.png file://$(CURDIR)/$(REPORT) 2>/dev/null; \
	  status=$$?; rm -rf $$profile; exit $$status
