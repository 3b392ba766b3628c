#!/usr/bin/env bash
# Build the static JupyterLite site: the notebooks and `%load_ext eos_magics` in the browser, on Pyodide,
# with nothing fetched at run time (no CDN, no PyPI). Output: build/lite/site (gitignored: build/).
#
#   bash scripts/build-lite.sh            # build (downloads are cached in build/lite/cache)
#   bash scripts/build-lite.sh --serve    # build, then serve it on http://127.0.0.1:8000/lab/index.html (LITE_PORT)
#
# Pinned inputs, all from the ordinary registries at build time only (docs/lite.md):
#   lite/requirements-build.txt + constraints-build.txt  the build venv (build/lite/venv): jupyterlite 0.8.6
#   npm pyodide@314.0.6 (sha256 below)                   the wasm runtime, loaders, stdlib, Pyodide's lock
#   lite/requirements-pyodide.txt (hashes)               the pure-Python wheels the kernel loads
#   lite/requirements-frontend.txt (hashes)              the ipywidgets manager's lab extension
#   the project's own wheel, built from this tree        engine, widgets, eos_magics
# lite/rewrite_lock.py writes Pyodide's lock for exactly those wheels (their own hashes); lite/jupyter-lite.json
# points the kernel at the local Pyodide and turns the PyPI fallback off. Needs python3 (venv), npm, node.
# Idempotent: the first run takes about a minute on 2 cores; later runs reuse the venv, the downloads and
# the compiled dependencies, and rebuild the site (about 15 s). Environment: PYTHON (default python3),
# LITE_NOTEBOOKS (default: 00 to 04), LITE_OUT (default build/lite), LITE_VENV and LITE_CACHE (default under
# LITE_OUT), LITE_PATCHES (step 4), LITE_PYC (step 5).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD

PYODIDE_VERSION=314.0.6
PYODIDE_TGZ_SHA256=d78ac549b28a2a58600cd06f44e017024151775f8c6b2d73fab1475400d38ea2
PY_TAGS=(--only-binary=:all: --platform any --python-version 3.14 --implementation py --abi none)
NOTEBOOKS=${LITE_NOTEBOOKS:-"00-tour 01-idempotent-producer 02-transactions-and-markers 03-transactional-messaging 04-checking-eos"}

OUT=${LITE_OUT:-$ROOT/build/lite}
VENV=${LITE_VENV:-$OUT/venv}   # LITE_VENV, LITE_CACHE: shared with another tree's build (one at a time)
CACHE=${LITE_CACHE:-$OUT/cache}
SRC=$OUT/src     # the lite_dir handed to `jupyter lite build`: config, static/pyodide, files/
SITE=$OUT/site   # the static site
started=$(date +%s)
say() { printf '[build-lite %3ss] %s\n' "$(($(date +%s) - started))" "$*"; }
# Reproducible timestamps (the project's wheel, the site's contents): the last commit's.
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 315532800)}

serve=0
for arg in "$@"; do
    case $arg in
        --serve) serve=1 ;;
        *) echo "usage: bash scripts/build-lite.sh [--serve]" >&2; exit 2 ;;
    esac
done
command -v npm >/dev/null || { echo "build-lite: npm is needed (apt-get install npm)" >&2; exit 1; }
mkdir -p "$CACHE"

# 1. The build venv, recreated only when its pins change.
stamp=$(cat lite/requirements-build.txt lite/constraints-build.txt | sha256sum | cut -c1-16)
if [ "$(cat "$VENV/.stamp" 2>/dev/null)" != "$stamp" ]; then
    say "build venv: $VENV"
    rm -rf "$VENV"
    "${PYTHON:-python3}" -m venv "$VENV"
    "$VENV/bin/python" -m pip install -q --disable-pip-version-check \
        -r lite/requirements-build.txt -c lite/constraints-build.txt
    echo "$stamp" >"$VENV/.stamp"
fi
PIP=("$VENV/bin/python" -m pip --disable-pip-version-check)

# 2. Pyodide from npm (no package wheels in it; those come from step 3).
tgz=$CACHE/pyodide-$PYODIDE_VERSION.tgz
if [ ! -f "$tgz" ] || ! echo "$PYODIDE_TGZ_SHA256  $tgz" | sha256sum -c --status; then
    say "npm pack pyodide@$PYODIDE_VERSION"
    rm -f "$tgz"
    (cd "$CACHE" && npm pack --silent "pyodide@$PYODIDE_VERSION" >/dev/null)
    echo "$PYODIDE_TGZ_SHA256  $tgz" | sha256sum -c --status ||
        { echo "build-lite: $tgz does not match its pinned sha256" >&2; exit 1; }
fi

# 3. The pure-Python wheels, hash-checked, for Python 3.14 on any platform.
for req in pyodide frontend; do
    dir=$CACHE/wheels-$req
    stamp=$(sha256sum "lite/requirements-$req.txt" | cut -c1-16)
    if [ "$(cat "$dir/.stamp" 2>/dev/null)" != "$stamp" ]; then
        say "pip download -r lite/requirements-$req.txt"
        rm -rf "$dir"
        "${PIP[@]}" download -q --no-deps --require-hashes "${PY_TAGS[@]}" -d "$dir" -r "lite/requirements-$req.txt"
        echo "$stamp" >"$dir/.stamp"
    fi
done

# 4. The project's own wheel, from a clean copy of this tree's packages (tracked and untracked files that git
#    does not ignore: no stale build/lib, no __pycache__), without build isolation (setuptools is pinned above).
say "the project's wheel"
own=$CACHE/own
rm -rf "$own" "$CACHE/project"
mkdir -p "$own" "$CACHE/project"
cp pyproject.toml README.md "$CACHE/project/"
git ls-files -co --exclude-standard -z engine widgets eos_magics | xargs -0 cp --parents -t "$CACHE/project"
# LITE_PATCHES: unified diffs (-p1) applied to that copy only, to try a product fix in the browser before it
# lands (docs/lite.md); the tree itself is never changed.
for patch_file in ${LITE_PATCHES:-}; do
    say "applying $patch_file to the copy"
    patch -s -p1 -d "$CACHE/project" <"$patch_file"
done
"${PIP[@]}" wheel -q --no-deps --no-build-isolation -w "$own" "$CACHE/project"

# 5. The lite_dir: config, Pyodide with the rewritten lock and the wheels, the notebooks and docs.
say "site sources: $SRC"
rm -rf "$SRC" "$SITE"
mkdir -p "$SRC/static/pyodide" "$SRC/files"
cp lite/jupyter-lite.json lite/overrides.json "$SRC/"
"$VENV/bin/python" - lite/jupyter_lite_config.json "$SRC/jupyter_lite_config.json" \
    "$CACHE"/wheels-pyodide/anywidget-*.whl "$CACHE"/wheels-frontend/jupyterlab_widgets-*.whl <<'EOF'
import json, sys
config = json.load(open(sys.argv[1]))
config["LiteBuildConfig"]["federated_extensions"] = sys.argv[3:]  # lab extensions unpacked from wheels
json.dump(config, open(sys.argv[2], "w"), indent=2)
EOF
tar -xzf "$tgz" -C "$SRC/static/pyodide" --strip-components=1 \
    package/pyodide.asm.mjs package/pyodide.asm.wasm package/pyodide.mjs package/pyodide.js \
    package/python_stdlib.zip package/pyodide-lock.json package/package.json
kernel_wheels=$VENV/share/jupyter/labextensions/@jupyterlite/pyodide-kernel-extension/static/pypi
cp "$SRC/static/pyodide/pyodide-lock.json" "$CACHE/pyodide-lock.npm.json"  # rewrite_lock.py overwrites it
# Bytecode: PyPI's wheels hold sources only, and compiling them on first import is the slowest part of
# `%load_ext eos_magics` in the browser; lite/pycompile.mjs adds Pyodide's own .pyc in Pyodide under Node.js
# (the dependencies once per pin change, the project's wheel and the kernel's every build). LITE_PYC=0: skip.
ship=("$CACHE/wheels-pyodide" "$own")
if [ "${LITE_PYC:-1}" != 0 ]; then
    command -v node >/dev/null || { echo "build-lite: node is needed for lite/pycompile.mjs (LITE_PYC=0 skips)" >&2; exit 1; }
    stamp=$(cat lite/requirements-pyodide.txt lite/pycompile.py lite/pycompile.mjs | sha256sum | cut -c1-16)-$PYODIDE_VERSION
    if [ "$(cat "$CACHE/pyc-deps/.stamp" 2>/dev/null)" != "$stamp" ]; then
        say "compiling the dependencies' wheels to Pyodide bytecode"
        rm -rf "$CACHE/pyc-deps" && mkdir -p "$CACHE/pyc-deps"
        node lite/pycompile.mjs "$SRC/static/pyodide" "$CACHE/wheels-pyodide" "$CACHE/pyc-deps" >/dev/null
        echo "$stamp" >"$CACHE/pyc-deps/.stamp"
    fi
    say "compiling the project's and the kernel's wheels to Pyodide bytecode"
    rm -rf "$CACHE/pyc-in" "$CACHE/pyc-own" && mkdir -p "$CACHE/pyc-in" "$CACHE/pyc-own"
    cp "$own"/*.whl "$kernel_wheels"/piplite-*.whl "$kernel_wheels"/pyodide_kernel-*.whl \
        "$kernel_wheels"/ipykernel-*.whl "$kernel_wheels"/widgetsnbextension-4.*.whl "$CACHE/pyc-in/"
    node lite/pycompile.mjs "$SRC/static/pyodide" "$CACHE/pyc-in" "$CACHE/pyc-own" >/dev/null
    ship=("$CACHE/pyc-deps" "$CACHE/pyc-own")
else
    ship+=("$kernel_wheels"/piplite-*.whl "$kernel_wheels"/pyodide_kernel-*.whl
        "$kernel_wheels"/ipykernel-*.whl "$kernel_wheels"/widgetsnbextension-4.*.whl)
fi
"$VENV/bin/python" lite/rewrite_lock.py --in-lock "$CACHE/pyodide-lock.npm.json" --out-dir "$SRC/static/pyodide" \
    --absent lite/absent.txt --preload lite/jupyter-lite.json "${ship[@]}"
# The notebooks as committed (git's HEAD, outputs stripped), never the working tree's executed copies, and
# HEAD's docs/, which the notebooks link to (lite/contents.py; a link to no file of the site fails here).
# shellcheck disable=SC2086
"$VENV/bin/python" lite/contents.py --out "$SRC/files" $NOTEBOOKS

# 6. The site. The lab extensions of anywidget and the ipywidgets manager come from their wheels (step 5's
#    jupyter_lite_config.json); the pyodide-kernel's own is in the build venv.
say "jupyter lite build"
(
    cd "$SRC"
    "$VENV/bin/jupyter" lite build --lite-dir "$SRC" --output-dir "$SITE" --contents "$SRC/files" \
        --log-level WARN
)
rm -f "$SRC/.jupyterlite.doit.db"
# JupyterLite's kernels manager cancels the queue after any error, even of a cell tagged raises-exception;
# lite/patch_app.py makes it honour the request's stop_on_error, so Run All goes on as in JupyterLab.
"$VENV/bin/python" lite/patch_app.py "$SITE" >/dev/null

# 7. Check: the kernel points at the local Pyodide (the kernel extension's default is a CDN) with the PyPI
#    fallback off, every wheel of the lock is in the site, and the three lab extensions are there.
"$VENV/bin/python" - "$SITE" <<'EOF'
import json, sys
from pathlib import Path
site = Path(sys.argv[1])
cfg = json.loads((site / "jupyter-lite.json").read_text())["jupyter-config-data"]
k = cfg["litePluginSettings"]["@jupyterlite/pyodide-kernel-extension:kernel"]
assert k["pyodideUrl"] == "./static/pyodide/pyodide.mjs" and k["disablePyPIFallback"] is True, k
lock = site / k["loadPyodideOptions"]["lockFileURL"]
pkgs = json.loads(lock.read_text())["packages"]
missing = [p["file_name"] for p in pkgs.values() if not (lock.parent / p["file_name"]).is_file()]
assert not missing, missing
exts = [p.name for p in (site / "extensions").glob("*") if p.is_dir()] + \
       [p.parent.name + "/" + p.name for p in (site / "extensions").glob("@*/*")]
for want in ("anywidget", "@jupyter-widgets/jupyterlab-manager", "@jupyterlite/pyodide-kernel-extension"):
    assert want in exts, (want, exts)
EOF

size=$(du -sb "$SITE" | cut -f1)
say "done: $SITE, $(find "$SITE" -type f | wc -l) files, $((size / 1000000)) MB ($(du -sh "$SITE" | cut -f1)), built in $(($(date +%s) - started)) s"
if [ "$serve" = 1 ]; then
    exec "$VENV/bin/python" lite/drive.py --site "$SITE" --serve "${LITE_PORT:-8000}"
fi
