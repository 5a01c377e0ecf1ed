#!/usr/bin/env bash
# Vendor the playground's browser libraries from the npm registry into the package:
# hexrag/api/static/vendor/ (committed, so installing hexrag needs no npm and the page works
# offline). Run after changing package.json: bash tools/webui/build.sh
set -euo pipefail
cd "$(dirname "$0")"
npm ci --no-audit --no-fund --loglevel=error
out=../../hexrag/api/static/vendor
mkdir -p "$out"
cp node_modules/cytoscape/dist/cytoscape.min.js "$out/cytoscape.min.js"
cp node_modules/cytoscape/LICENSE "$out/cytoscape.LICENSE"
echo "vendored cytoscape $(node -p 'require("./node_modules/cytoscape/package.json").version')"
