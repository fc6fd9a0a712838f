#!/usr/bin/env bash
# The analyst's demonstration in one command: a fresh enclave home with the three
# reference incidents, the procurement intervention policies active, two analysts
# (alice may audit, bob may only look), the enclave service and one worker, and
# JupyterLab for alice with the investigation notebook. Ctrl-C stops everything.
#
#   bash scripts/analyst-demo.sh [HOME_DIR]      (default: ./.replay-enclave-demo)
#
# Ports: REPLAY_ENCLAVE_PORT (default 8765) and JUPYTER_PORT (default 8888).
set -euo pipefail
cd "$(dirname "$0")/.."
HOME_DIR="${1:-.replay-enclave-demo}"
SERVICE_PORT="${REPLAY_ENCLAVE_PORT:-8765}"
LAB_PORT="${JUPYTER_PORT:-8888}"
if [ -e "$HOME_DIR" ]; then
  echo "error: $HOME_DIR exists; remove it or name another folder" >&2
  exit 2
fi

echo "== enclave home, reference incidents (and their demo certificates)"
replay-enclave demo --home "$HOME_DIR" >/dev/null
HOME_DIR="$(cd "$HOME_DIR" && pwd)"

echo "== intervention policies"
replay-enclave policy load policies/interventions/*.toml --home "$HOME_DIR" >/dev/null
for policy in procurement.decider-model.revision procurement.supplier-confidence.replace \
              claims.fraud-score.nullify claims.fraud-score.perturb; do
  replay-enclave policy validate "$policy" --home "$HOME_DIR" >/dev/null
  replay-enclave policy activate "$policy" --home "$HOME_DIR"
done

echo "== analysts"
token_of() { python -c 'import json,sys; print(json.load(sys.stdin)["token"])'; }
ALICE_TOKEN=$(replay-enclave analyst add alice --tenant acme --role auditor \
  --role restricted-clearance --home "$HOME_DIR" --json | token_of)
BOB_TOKEN=$(replay-enclave analyst add bob --tenant acme --role viewer --home "$HOME_DIR" --json | token_of)
umask 077
printf '%s\n' "$ALICE_TOKEN" > "$HOME_DIR/alice.token"
printf '%s\n' "$BOB_TOKEN" > "$HOME_DIR/bob.token"

pids=()
cleanup() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT INT TERM

echo "== service on 127.0.0.1:$SERVICE_PORT and one worker (logs in $HOME_DIR/*.log)"
replay-enclave serve --home "$HOME_DIR" --host 127.0.0.1 --port "$SERVICE_PORT" \
  >"$HOME_DIR/serve.log" 2>&1 &
pids+=($!)
replay-enclave worker --home "$HOME_DIR" >"$HOME_DIR/worker.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do
  python -c "import urllib.request,sys; urllib.request.urlopen(sys.argv[1], timeout=1)" \
    "http://127.0.0.1:$SERVICE_PORT/openapi.json" 2>/dev/null && break
  sleep 0.2
done

mkdir -p "$HOME_DIR/notebooks"
cp -n examples/investigation.ipynb "$HOME_DIR/notebooks/"
LAB_TOKEN=$(python -c 'import secrets; print(secrets.token_hex(16))')
export REPLAY_ENCLAVE_URL="http://127.0.0.1:$SERVICE_PORT"
export REPLAY_ENCLAVE_TOKEN_FILE="$HOME_DIR/alice.token"
export REPLAY_ENCLAVE_ISSUER_KEY="$HOME_DIR/keys/signing-key.pem.pub"
unset REPLAY_ENCLAVE_TOKEN

jupyter lab --no-browser --ip=127.0.0.1 --port="$LAB_PORT" $( [ "$(id -u)" = 0 ] && echo --allow-root ) \
  --IdentityProvider.token="$LAB_TOKEN" --ServerApp.root_dir="$HOME_DIR/notebooks" \
  --ServerApp.jpserver_extensions=jupyter_ext=True 2>"$HOME_DIR/lab.log" &
pids+=($!)
for _ in $(seq 300); do
  python -c "import urllib.request,sys; urllib.request.urlopen(sys.argv[1], timeout=1)" \
    "http://127.0.0.1:$LAB_PORT/api/status?token=$LAB_TOKEN" 2>/dev/null && break
  kill -0 "${pids[-1]}" 2>/dev/null || { echo "error: JupyterLab did not start (see $HOME_DIR/lab.log)" >&2; exit 3; }
  sleep 0.2
done

echo
echo "JupyterLab for alice (bob's token is in $HOME_DIR/bob.token):"
echo "  http://127.0.0.1:$LAB_PORT/lab/tree/investigation.ipynb?token=$LAB_TOKEN"
echo
wait "${pids[-1]}"
