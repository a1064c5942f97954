# 一层 Transformer — every target creates .venv and installs the pinned requirements if needed.
SHELL := /bin/bash
VENV := .venv
BIN := $(VENV)/bin
INSTALLED := $(VENV)/.installed
ASSETS := node_modules/.package-lock.json
NOTEBOOKS := $(wildcard chapters/*.ipynb)
SONGCI := data/songci.jsonl

.PHONY: book check test claims lab notebooks bench lint pdf screenshots songci jintishi clean

book: $(INSTALLED) $(ASSETS)
	$(BIN)/jupyter-book build . --warningiserror --keep-going
	@echo "书已生成：file://$(CURDIR)/_build/html/index.html"

# The tests run on another CPU code path than the one that stored the outputs (PyTorch's
# portable kernels, MKL's reproducible mode) and with the experiments' seeds shifted: exact
# cells must still match digit for digit, and every experiment claim (an assert) must hold.
# Two processes share the tests, a file at a time (a notebook's cells share a kernel), and the
# browser checks of a page at a time (tests/conftest.py).
PORTABLE := ATEN_CPU_CAPABILITY=default MKL_CBWR=COMPATIBLE
SEED_OFFSET ?= 3

test: $(INSTALLED) $(ASSETS) $(SONGCI)
	$(BIN)/ruff check .
	$(BIN)/jupyter-book build . --warningiserror --keep-going
	$(PORTABLE) ONELAYER_SEED_OFFSET=$(SEED_OFFSET) $(BIN)/pytest tests --nbval chapters \
		--nbval-current-env --nbval-sanitize-with tests/nbval_sanitize.cfg -n 2 --dist loadfile
	@if [ "$$CI" != true ] && ! command -v chromium >/dev/null && [ ! -x /usr/bin/chromium ]; then \
		echo "没有 Chromium，浏览器测试跳过了：sudo apt-get install chromium 之后再运行 make test 即可加上它们"; \
	fi

# The fast tier, for every edit: lint, every unit test and guard that needs no browser and no
# long training, and strict nbval over the chapters the edit can change (tools/changed_notebooks.py:
# notebooks changed since the last commit, or using an onelayer module that changed), on this
# machine's CPU path with the shifted seeds. make test runs everything.
check: $(INSTALLED) $(SONGCI)
	$(BIN)/ruff check .
	ONELAYER_SEED_OFFSET=$(SEED_OFFSET) $(BIN)/pytest tests $$($(BIN)/python tools/changed_notebooks.py) \
		--nbval --nbval-current-env --nbval-sanitize-with tests/nbval_sanitize.cfg \
		-m "not browser and not slow" -n 2 --dist loadfile

# The claim sweep (slow: about 20 times each chapter's run time; not part of make test): each
# chapter with experiment claims runs on the portable CPU path at seed offsets 0, 1000, …, 19000,
# and every assert records whether it held. Results: chapters/claims.json and the table of the
# reproducibility appendix. A chapter is re-run only when its experiment cells changed.
# One chapter: make claims CHAPTERS=03_residual
claims: $(INSTALLED)
	$(BIN)/python tools/claims.py $(if $(CHAPTERS),--chapters $(CHAPTERS))

# The chapters are the project's own: trust them, so Lab draws their saved panels on opening.
# (Jupyter refuses to run as root unless told: root is what containers and CI machines are.)
lab: $(INSTALLED)
	$(BIN)/jupyter trust $(NOTEBOOKS)
	$(BIN)/jupyter lab $(if $(filter 0,$(shell id -u)),--allow-root) chapters

notebooks: $(INSTALLED)
	$(BIN)/jupyter nbconvert --to notebook --execute --inplace \
		--ExecutePreprocessor.store_widget_state=True --ExecutePreprocessor.record_timing=False \
		--ExecutePreprocessor.timeout=120 $(NOTEBOOKS)

bench: $(INSTALLED) $(ASSETS)
	$(BIN)/jupyter-book build . --warningiserror --keep-going
	$(BIN)/python tools/bench_pages.py
	$(BIN)/python tools/bench_lighthouse.py
	$(BIN)/python tools/bench_model.py
	$(BIN)/python -W ignore tools/bench_ensembles.py
	$(BIN)/python tools/bench.py --full

# Whole-page screenshots of every page (desktop, phone 390 px, dark mode) in _build/screenshots/,
# taken by the page tests: look at them after changing styles.
screenshots: $(INSTALLED) $(ASSETS)
	$(BIN)/jupyter-book build . --warningiserror --keep-going
	ONELAYER_SCREENSHOTS=1 $(BIN)/pytest tests -m browser -n 2 --dist loadfile \
		-k "offline_typeset or phone_page or dark_mode"
	@echo "截图在 $(CURDIR)/_build/screenshots/"

# The whole book as one PDF: the single-page build printed by the machine's Chromium
# (tools/make_pdf.py), then the HTML book again, which links the PDF from every page.
pdf: $(INSTALLED) $(ASSETS)
	$(BIN)/python tools/make_pdf.py
	$(BIN)/jupyter-book build . --warningiserror --keep-going
	@echo "PDF 已生成：file://$(CURDIR)/_build/html/onelayer-transformer.pdf"

lint: $(INSTALLED)
	$(BIN)/ruff check .

# The 宋词 corpus (tools/songci.py): the npm package chinese-poetry, pinned by version and
# sha512, is downloaded (about 85 MB) and only its ci are kept, one a line, checked by sha256.
# make test and make check fetch it first: its tests check the corpus.
songci: $(SONGCI)

$(SONGCI): tools/songci.py | $(INSTALLED)
	$(BIN)/python tools/songci.py

# The 近体诗 the rhyme study's arm "more rhymed text" trains on (tools/jintishi.py): the 全唐诗 of
# the same package, in simplified characters (OpenCC), the 绝句 and 律诗 rhymed on 平. Only
# training that arm needs it (tools/train_rhyme_study.py --arms shi); the book reads checkpoints.
jintishi: data/jintishi.jsonl

data/jintishi.jsonl: tools/jintishi.py tools/songci.py | $(INSTALLED)
	$(BIN)/python tools/jintishi.py

$(INSTALLED): requirements.txt pyproject.toml
	test -d $(VENV) || python3 -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements.txt
	touch $@

# tools/npm: the machine's npm, or the Node.js from requirements.txt in .venv where it has none.
$(ASSETS): package.json package-lock.json | $(INSTALLED)
	tools/npm ci --no-audit --no-fund --ignore-scripts

clean:
	rm -rf _build
