#!/usr/bin/env bash
# Build the JupyterLab extension (labextension/ → jupyter_ext/labextension/) and make
# the JupyterLab of the active Python environment load it from there. Cheap when
# nothing changed: npm ci runs only when the lockfile is newer than node_modules, the
# build only when a source is newer than the built package.json.
#
# The built extension is committed (installs need no Node.js): after changing a source,
# run this and commit jupyter_ext/labextension/ with it. The build is byte-reproducible,
# and tests/project/test_labextension_assets.py fails when the committed files are stale.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v npm >/dev/null || { echo "build-labextension: npm (Node.js 20) is not on PATH" >&2; exit 1; }
ext=labextension
out=jupyter_ext/labextension
# The @jupyterlab/* packages the extension builds against are the ones of the locked
# jupyterlab (requirements/test.lock): a drift would build against another core.
lab="$(python -c 'from importlib.metadata import version; print(version("jupyterlab"))')"
pinned="$(node -p 'require("./labextension/package.json").dependencies["@jupyterlab/application"]')"
if [ "$lab" != "$pinned" ]; then
  echo "build-labextension: @jupyterlab/application $pinned does not match jupyterlab $lab;" \
    "update labextension/package.json and its lockfile" >&2
  exit 1
fi
if [ ! -f "$ext/node_modules/.package-lock.json" ] ||
  [ "$ext/package-lock.json" -nt "$ext/node_modules/.package-lock.json" ]; then
  (cd "$ext" && npm ci --no-audit --no-fund --loglevel=error)
fi
if [ ! -f "$out/package.json" ] ||
  [ -n "$(find "$ext/src" "$ext/style" "$ext/schema" "$ext/package.json" "$ext/tsconfig.json" \
    "$ext/rspack.config.js" "$ext/install.json" "$ext/package-lock.json" \
    -newer "$out/package.json" -print -quit)" ]; then
  # npm's build also copies install.json (JupyterLab's record of how the extension was
  # installed) into the output, so an `npm run clean && npm run build` gives it too
  (cd "$ext" && npm run --silent build)
  touch "$out/package.json"
fi
# What `jupyter labextension develop` does, without importing the package: the
# environment's labextensions folder points at the build output.
target="$(python -c 'import sys; print(sys.prefix)')/share/jupyter/labextensions/replay-enclave"
mkdir -p "$(dirname "$target")"
if [ "$(readlink "$target" 2>/dev/null)" != "$PWD/$out" ]; then
  rm -rf "$target"
  ln -s "$PWD/$out" "$target"
fi
