# The book's two commands: `make book` (HTML and PDF; `make html` for the pages alone) and `make test`. Both set up .venv when it is missing or stale.
# `make flake-check` reruns every claim of every chapter over 30 seeds (tools/flake.py; about an hour on 2 cores;
# the latest report is tools/FLAKE_REPORT.md).
# `make bench` times the package against its peers (benchmarks/, sized by the device) and writes
# pavlov/data/benchmarks/ (results.json, machine.json, RESULTS.md), which the appendix reads through pavlov.book.
# `make budget` executes every page alone and reports its time against its budget (pavlov/data/budget.json).
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
READY := $(VENV)/.ready
COLAB_VENV := .venv-colab
COLAB_READY := $(COLAB_VENV)/.ready
# no progress bars in the built pages or the test logs (readers running a chapter see them)
export PAVLOV_PROGRESS := 0

.PHONY: book html pdf tex test bench budget browser-test flake-check full-scale colab-env clean

# The book: the HTML pages, then the PDF, which the introduction links to (_build/html/pavlov.pdf).
# PAVLOV_BOOK: the explorers draw their frames in advance for the static pages (pavlov.plotting.static_explorer)
# and give the PDF their first frame. Both show one execution of each page, taken from _build/.jupyter_cache:
# `make test` stores its executions there, and a page missing from it is executed by the first build that needs it.
book: html pdf

html: $(READY)
	PAVLOV_BOOK=1 $(BIN)/jupyter-book build . -W -n --keep-going --all

# The PDF through LaTeX (xelatex; the SVG figures are converted by rsvg-convert), with TeX Live from Debian's
# packages, installed here when they are missing.
pdf: $(READY) tex
	PAVLOV_BOOK=1 $(BIN)/jupyter-book build . --builder pdflatex -W -n --keep-going --all
	mkdir -p _build/html && cp _build/latex/pavlov.pdf _build/html/pavlov.pdf

TEX_PACKAGES := latexmk texlive-latex-recommended texlive-latex-extra texlive-fonts-recommended texlive-xetex \
	librsvg2-bin fonts-freefont-otf
tex:
	@if ! command -v xelatex >/dev/null || ! command -v latexmk >/dev/null || ! command -v rsvg-convert >/dev/null \
	    || ! test -e /usr/share/fonts/opentype/freefont/FreeSerif.otf; then \
	  if [ "$$(id -u)" != 0 ]; then \
	    echo "make pdf needs TeX Live: as root, apt-get install $(TEX_PACKAGES)" >&2; exit 1; fi; \
	  echo "installing TeX Live for the PDF (Debian packages; a minute or two)"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(TEX_PACKAGES) >/dev/null; fi

# Two workers, one thread each: the Colab emulation (tests/test_colab.py, one xdist group, with chapter 9) beside the
# rest (the unit tests and every page executed as the book executes it, into the cache the book is built from:
# tools/execute.py).
test: $(READY) $(COLAB_READY)
	OMP_NUM_THREADS=1 $(BIN)/python -m pytest -n 2 --dist loadgroup

# The Colab-emulation environment (tests/test_colab.py): Colab's own package versions (colab/constraints.txt).
colab-env: $(COLAB_READY)

$(COLAB_READY): colab/constraints.txt colab/runtime.txt
	rm -rf $(COLAB_VENV)
	$(PYTHON) -m venv $(COLAB_VENV)
	$(COLAB_VENV)/bin/python -m pip install --quiet --disable-pip-version-check -c colab/constraints.txt pip
	$(COLAB_VENV)/bin/python -m pip install --quiet --disable-pip-version-check -r colab/runtime.txt -c colab/constraints.txt
	touch $@

# The built book in headless Chromium (tests/test_browser.py, tests/test_layout.py), two browsers at once; `make test`
# runs them too when _build/html exists.
browser-test: $(READY)
	PAVLOV_BROWSER_TEST=1 $(BIN)/python -m pytest -n 2 tests/test_browser.py tests/test_layout.py

flake-check: $(READY)
	$(BIN)/python -m tools.flake --seeds 30

# Every chapter at the full scale, one after another (tools/full_scale.py; CHAPTERS="ch3 ch9" for some): each one's
# time and peak host and GPU memory go to pavlov/data/full_scale.json, which the GPU page lists. Run it on a GPU.
# WORK=1 tallies every op (tools/work.py) into pavlov/data/work.json too: the GPU page's T4 estimates.
full-scale: $(READY)
	$(BIN)/python -m tools.full_scale $(CHAPTERS) $(if $(WORK),--work)

bench: $(READY)
	$(BIN)/python -m benchmarks.run

# The time budgets, kept by measuring: every page executed alone, one at a time (run it on an otherwise idle machine),
# against its budget, and .ci/run's stages against 20 minutes (tools/budget.py); writes pavlov/data/budget.json, which
# the performance appendix reads.
budget: $(READY)
	OMP_NUM_THREADS=1 $(BIN)/python -m tools.budget

$(READY): requirements.txt benchmarks/requirements.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements.txt
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps -r benchmarks/requirements.txt
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
	touch $@

clean:
	rm -rf _build
