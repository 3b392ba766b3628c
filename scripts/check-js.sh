#!/usr/bin/env bash
# Type-check the anywidget front-ends (plain ES modules, widgets/**/*.js) with TypeScript's checkJs:
# jsconfig.json (strict, ES2022 + DOM) and widgets/anywidget-types.d.ts (the render props' types).
#
#   bash scripts/check-js.sh          # also run by scripts/test.sh as the "check-js" step
#
# Installs the pinned typescript (package.json, package-lock.json) with `npm ci` when node_modules
# lacks it or holds another version; needs node and npm (Node >= 16). Succeeds with nothing to do
# when widgets/ has no .js file.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

if [ -z "$(find widgets -name '*.js' -not -path '*/node_modules/*' -print -quit)" ]; then
    echo "check-js.sh: no .js files under widgets/; nothing to check"
    exit 0
fi

for tool in node npm npx; do
    if ! command -v "$tool" >/dev/null; then
        echo "check-js.sh: '$tool' not found; install Node.js >= 16 with npm (Debian: apt-get install nodejs npm)" >&2
        exit 2
    fi
done

want="$(node -p 'require("./package.json").devDependencies.typescript')"
have="$(node -p 'try { require("./node_modules/typescript/package.json").version } catch { "" }')"
if [ "$have" != "$want" ]; then
    echo "check-js.sh: installing typescript $want (npm ci)"
    npm ci --no-audit --no-fund
fi

npx --no-install tsc -p jsconfig.json
echo "check-js.sh: widgets/**/*.js type-check clean"
