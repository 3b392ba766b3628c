#!/usr/bin/env bash
# Check that the Binder image would work: build a fresh venv exactly from binder/'s files, then
# execute a notebook in it with nbclient, importing eos-magics from that venv's site-packages.
#
#   bash scripts/binder-check.sh                      # runs notebooks/00-tour.ipynb
#   bash scripts/binder-check.sh path/to/a.ipynb b.ipynb
#   bash scripts/binder-check.sh --all                # every notebook Binder offers (notebooks/*.ipynb)
#   PIP_CACHE_DIR=/some/cache bash scripts/binder-check.sh   # reuse a pip cache (pyspark's wheel)
#
# What it does, in the order repo2docker does it (binder/README.md):
#   1. $PYTHON -m venv in a temp dir (default python3; Binder's is the one in binder/runtime.txt);
#   2. pip install -r binder/requirements.txt;
#   3. binder/postBuild, run from the repository root with the venv's pip first on PATH (it must
#      be executable: repo2docker runs it directly);
#   4. nbclient (only if requirements.txt lacks it) and a python3 kernel spec for that venv;
#   5. through binder/start (repo2docker's launch hook: it sets the environment the kernel sees),
#      each notebook in turn, in a fresh kernel whose working directory is a temp dir, with no PYTHONPATH, so the
#      repository is not on sys.path and a file missing from the installed package fails the
#      run. A last cell, appended in memory, asserts that engine, widgets and eos_magics were
#      imported from the venv's site-packages.
# Exits non-zero if any step fails or any cell raises; 2 if the notebook or a binder file is
# missing. apt.txt (Java) is not installed: this machine's java is used. Each step prints its
# elapsed time. The first run builds pyspark's wheel from its sdist (about a minute, 456 MB);
# pip's cache (PIP_CACHE_DIR, default ~/.cache/pip) makes later runs fast. Environment:
# PYTHON, NB_TIMEOUT (seconds per cell, default 300), KEEP_TMP=1 (keep the venv and the executed
# notebook, printed at the end).
set -euo pipefail

CALLER_DIR="$(pwd)"
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT="$(pwd)"
PYTHON="${PYTHON:-python3}"
NB_TIMEOUT="${NB_TIMEOUT:-300}"

NOTEBOOKS=()
if [ "$#" -eq 1 ] && [ "$1" = "--all" ]; then
    NOTEBOOKS=("$ROOT"/notebooks/*.ipynb)
else
    for arg in "$@"; do
        case "$arg" in
            -*)
                echo "binder-check.sh: usage: bash scripts/binder-check.sh [--all | NOTEBOOK.ipynb...]" >&2
                exit 2
                ;;
            /*) NOTEBOOKS+=("$arg") ;;
            *) NOTEBOOKS+=("$CALLER_DIR/$arg") ;;
        esac
    done
fi
[ "${#NOTEBOOKS[@]}" -gt 0 ] || NOTEBOOKS=("$ROOT/notebooks/00-tour.ipynb")
for NOTEBOOK in "${NOTEBOOKS[@]}"; do
    if [ ! -f "$NOTEBOOK" ]; then
        echo "binder-check.sh: notebook not found: $NOTEBOOK (pass one: bash scripts/binder-check.sh NOTEBOOK.ipynb)" >&2
        exit 2
    fi
done
for f in binder/requirements.txt binder/postBuild binder/runtime.txt binder/start; do
    if [ ! -f "$f" ]; then
        echo "binder-check.sh: $f is missing" >&2
        exit 2
    fi
done
for f in binder/postBuild binder/start; do
    if [ ! -x "$f" ]; then
        echo "binder-check.sh: $f is not executable (chmod +x $f); repo2docker runs it directly" >&2
        exit 2
    fi
done

now_ms() { date +%s%3N; }
T_START="$(now_ms)"
T_STEP="$T_START"
done_step() {
    local t
    t="$(now_ms)"
    printf 'binder-check.sh: %-46s %7.1f s\n' "$1" "$(((t - T_STEP) / 100))e-1"
    T_STEP="$t"
}

# Run a command with its stderr merged into stdout, minus the warnings this machine's pip index
# configuration prints for every package that a local index lacks. Keeps the command's status.
filtered() {
    "$@" 2>&1 | sed -e "/^WARNING: Location 'file:.*' is ignored: it is neither a file nor a directory\.\$/d"
}

TMP="$(mktemp -d "${TMPDIR:-/tmp}/binder-check.XXXXXX")"
REMOVE_BUILD=0
cleanup() {
    # setuptools' in-tree build dir (gitignored), made by postBuild's pip install: removed if new.
    if [ "$REMOVE_BUILD" = 1 ]; then rm -rf "$ROOT/build"; fi
    if [ "${KEEP_TMP:-0}" = 1 ]; then
        echo "binder-check.sh: kept $TMP (venv, executed notebook)"
    else
        rm -rf "$TMP"
    fi
}
trap cleanup EXIT
VENV="$TMP/venv"
WORKDIR="$TMP/work"
mkdir -p "$WORKDIR"

# Nothing from this tree or the caller's environment may leak into the check.
unset PYTHONPATH PYTHONHOME PYTHONSTARTUP VIRTUAL_ENV JUPYTER_PATH
export PYTHONNOUSERSITE=1 PIP_NO_INPUT=1 PIP_DISABLE_PIP_VERSION_CHECK=1
export TZ=UTC PYTHONHASHSEED=0 JUPYTER_PLATFORM_DIRS=1
export IPYTHONDIR="$TMP/ipython" JUPYTER_CONFIG_DIR="$TMP/jupyter-config" JUPYTER_DATA_DIR="$TMP/jupyter-data"

runtime="$(tr -d '[:space:]' < binder/runtime.txt)"
have="python-$("$PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
echo "binder-check.sh: ${#NOTEBOOKS[@]} notebook(s); $PYTHON is $have (Binder: $runtime from binder/runtime.txt)"
if [ "$have" != "$runtime" ]; then
    echo "binder-check.sh: note: not the runtime.txt version; set PYTHON=python${runtime#python-} to check with it"
fi

"$PYTHON" -m venv "$VENV"
done_step "venv ($have)"

# --no-compile: repo2docker compiles bytecode, but that checks nothing here and takes ~30 s.
filtered "$VENV/bin/python" -m pip install --quiet --no-compile -r binder/requirements.txt
done_step "pip install -r binder/requirements.txt"

[ -e build ] || REMOVE_BUILD=1
(
    export PATH="$VENV/bin:$PATH" VIRTUAL_ENV="$VENV"
    filtered ./binder/postBuild
)
done_step "binder/postBuild"

extra=()
grep -qiE '^nbclient([=<>!~ ;[]|$)' binder/requirements.txt || extra+=(nbclient)
grep -qiE '^ipykernel([=<>!~ ;[]|$)' binder/requirements.txt || extra+=(ipykernel)
if [ "${#extra[@]}" -gt 0 ]; then
    filtered "$VENV/bin/python" -m pip install --quiet --no-compile "${extra[@]}"
fi
# The venv's python3 kernel spec, rewritten with this venv's python as an absolute path; the
# user-level dirs are empty temp dirs (above), so it is the first python3 kernel found.
"$VENV/bin/python" -m ipykernel install --prefix "$VENV" --name python3 > /dev/null
done_step "checker tools (${extra[*]:-none}) and kernel spec"

SITE="$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
for NOTEBOOK in "${NOTEBOOKS[@]}"; do
rm -rf "$WORKDIR" && mkdir -p "$WORKDIR" && cd "$WORKDIR"
env PATH="$VENV/bin:$PATH" "$ROOT/binder/start" "$VENV/bin/python" - "$NOTEBOOK" "$WORKDIR" "$SITE" "$NB_TIMEOUT" "$TMP/executed-$(basename "$NOTEBOOK")" <<'EOF'
import sys

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

notebook, workdir, site, timeout, out = sys.argv[1:6]
nb = nbformat.read(notebook, as_version=4)
n_cells = sum(c.cell_type == "code" for c in nb.cells)
# Appended in memory only: where did the kernel import the project from?
nb.cells.append(
    nbformat.v4.new_code_cell(
        "import engine, eos_magics, widgets\n"
        f"_site = {site!r}\n"
        "_where = {m.__name__: m.__file__ for m in (engine, eos_magics, widgets)}\n"
        "_bad = {k: v for k, v in _where.items() if not v.startswith(_site)}\n"
        "assert not _bad, f'imported from outside the Binder venv {_site}: {_bad}'"
    )
)
client = NotebookClient(
    nb, timeout=int(timeout), kernel_name="python3", resources={"metadata": {"path": workdir}}
)
try:
    client.execute()
except CellExecutionError as exc:
    nbformat.write(nb, out)
    print(exc, file=sys.stderr)
    print(f"binder-check.sh: a cell failed in {notebook}", file=sys.stderr)
    sys.exit(1)
except Exception as exc:  # a cell timed out, the kernel died or did not start
    nbformat.write(nb, out)
    print(f"binder-check.sh: {notebook} did not run: {type(exc).__name__}: {exc}", file=sys.stderr)
    sys.exit(1)
nbformat.write(nb, out)
print(f"binder-check.sh: {n_cells} code cell(s) ran; the package came from {site}")
EOF
cd "$ROOT"
done_step "execute $(basename "$NOTEBOOK")"
done

t="$(now_ms)"
printf 'binder-check.sh: OK in %.1f s total\n' "$(((t - T_START) / 100))e-1"
