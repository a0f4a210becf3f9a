#!/usr/bin/env bash
# Runs the delegation example offline, start to finish: builds the `harness` binary (release) and
# the ledger plugin, starts the ledger and the front desk on free loopback ports with their state
# in a temporary folder, waits until both serve their cards, asks the front desk a question about
# an account (blocking SendMessage), prints its answer and the child task it created on the
# ledger (GetTask), and stops both. Exits non-zero, with both logs' last lines, if any step fails.
#
#   examples/delegation/run.sh ["question"]
#
# HARNESS=/path/to/harness uses that binary instead of building one. KEEP=1 keeps the temporary
# folder (configurations, stores, logs). Needs cargo, curl and python3 (which reads the JSON).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
question="${1:-What is the current balance of the Acme Corp account?}"
# The task extension's key in Task.metadata, and its URI, which a request names in
# A2A-Extensions to get it (host/src/state/records/extension.rs).
ext_key="io.github.madarauchiha-314.tiny-harness/task"
ext_uri="https://madarauchiha-314.github.io/tiny-harness/a2a/ext/task/v1"
# How long a server may take to start (compiling the plugins on a cold cache included), and how
# long the question may take to be answered.
start_timeout=120
answer_timeout=300

say() { printf 'run.sh: %s\n' "$*" >&2; }
fail() {
  say "$*"
  exit 1
}

for tool in cargo curl python3; do
  command -v "$tool" >/dev/null || fail "$tool is missing (cargo: https://rustup.rs; curl and python3: your package manager)."
done

# Prints the value at a path of keys and list indexes in the JSON on stdin: text as is, anything
# else as JSON, nothing when the path is absent.
jget() {
  python3 -c '
import json, sys
value = json.load(sys.stdin)
for key in sys.argv[1:]:
    if isinstance(value, list) and key.isdigit() and int(key) < len(value):
        value = value[int(key)]
    elif isinstance(value, dict):
        value = value.get(key)
    else:
        value = None
    if value is None:
        break
if value is not None:
    print(value if isinstance(value, str) else json.dumps(value))
' "$@"
}

# --- Build ------------------------------------------------------------------------------------

if [ -z "${HARNESS:-}" ]; then
  say "building harness (release; the first build takes several minutes)"
  cargo build --quiet --release --bin harness --manifest-path "$root/Cargo.toml"
  target_dir="$(cargo metadata --format-version 1 --no-deps --manifest-path "$root/Cargo.toml" |
    jget target_directory)"
  HARNESS="$target_dir/release/harness"
fi
[ -x "$HARNESS" ] || fail "no harness binary at $HARNESS"

if command -v rustup >/dev/null && ! rustup target list --installed | grep -qx wasm32-wasip2; then
  rustup target add wasm32-wasip2 >/dev/null
fi
say "building the ledger plugin (wasm32-wasip2)"
# Into this checkout's target/, like scripts/build-plugins: the host's build settings (a shared
# target dir, coverage flags) must not leak into a wasm guest's build.
plugin_target="$root/target/plugin-builds/example-ledger"
env -u CARGO_TARGET_DIR -u RUSTFLAGS -u CARGO_ENCODED_RUSTFLAGS \
  cargo build --quiet --release --locked --target wasm32-wasip2 \
  --manifest-path "$here/ledger-plugin/Cargo.toml" --target-dir "$plugin_target"

# --- Start ------------------------------------------------------------------------------------

work="$(mktemp -d "${TMPDIR:-/tmp}/tiny-harness-delegation.XXXXXX")"
ledger_pid=""
front_pid=""
ok=0
cleanup() {
  local pid log
  for pid in $front_pid $ledger_pid; do
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  if [ "$ok" = 1 ] && [ -z "${KEEP:-}" ]; then
    rm -rf "$work"
    return
  fi
  if [ "$ok" != 1 ]; then
    for log in "$work"/*.log; do
      [ -e "$log" ] || continue
      say "last lines of $log:"
      tail -n 20 "$log" >&2
    done
  fi
  say "kept $work (configurations, stores, logs)"
}
trap cleanup EXIT

# The shipped configurations, scripts and the ledger's skills, copied so that their relative
# paths (the script, the plugins and skills folders, the store) resolve inside the temporary
# folder; only the ports change.
cp "$here"/ledger.toml "$here"/ledger-script.toml \
  "$here"/front-desk.toml "$here"/front-desk-script.toml "$work/"
cp -R "$here/ledger" "$work/ledger"
mkdir -p "$work/ledger-plugins"
cp "$plugin_target/wasm32-wasip2/release/tiny_harness_example_ledger.wasm" \
  "$work/ledger-plugins/ledger.wasm"
# `-i.orig` works with GNU and BSD sed alike.
sed -i.orig 's/^bind = .*/bind = "127.0.0.1:0"/' "$work/ledger.toml" "$work/front-desk.toml"

# The token that makes the front desk a trusted delegator of the ledger (both read it).
FRONT_DESK_TOKEN="${FRONT_DESK_TOKEN:-$(python3 -c 'import secrets; print(secrets.token_hex(32))')}"
export FRONT_DESK_TOKEN

# Starts `harness serve` on a configuration; sets `started_pid` and `started_url`, the URL read
# from its log: port 0 lets the system pick a free port, so two runs never collide.
start() {
  local name="$1" log="$work/$1.log" waited=0
  (cd "$work" && NO_COLOR=1 RUST_LOG="${RUST_LOG:-info}" \
    exec "$HARNESS" serve --config "$work/$name.toml" >"$log" 2>&1) &
  started_pid="$!"
  started_url=""
  while [ -z "$started_url" ]; do
    kill -0 "$started_pid" 2>/dev/null || fail "the $name stopped while starting"
    [ "$waited" -lt $((start_timeout * 10)) ] || fail "the $name did not start within ${start_timeout} s"
    sleep 0.1
    waited=$((waited + 1))
    started_url="$(grep -o 'listening on http://[0-9.:]*' "$log" | head -n 1 | sed 's/listening on //')" || true
  done
}

# Waits until an agent serves its card at `$2`; sets `card_name`.
wait_for_card() {
  local name="$1" url="$2" card="" waited=0
  until card="$(curl -fsS --max-time 5 "$url/.well-known/agent-card.json" 2>/dev/null)"; do
    [ "$waited" -lt $((start_timeout * 10)) ] || fail "the $name's card is not served at $url"
    sleep 0.1
    waited=$((waited + 1))
  done
  card_name="$(printf '%s' "$card" | jget name)"
}

rpc() {
  local url="$1" body="$2"
  curl -sS --max-time "$answer_timeout" "$url/" \
    -H 'Content-Type: application/json' -H 'A2A-Version: 1.0' -H "A2A-Extensions: $ext_uri" \
    -d "$body"
}

say "starting the ledger"
start ledger
ledger_pid="$started_pid"
ledger_url="$started_url"
wait_for_card ledger "$ledger_url"
say "ledger: \"$card_name\" at $ledger_url"

# The front desk knows the ledger by its [[agents]] entry; point it at the port the ledger got.
sed -i.orig "s|^url = .*|url = \"$ledger_url\"|" "$work/front-desk.toml"
rm -f "$work"/*.orig
say "starting the front desk"
start front-desk
front_pid="$started_pid"
front_url="$started_url"
wait_for_card front-desk "$front_url"
say "front desk: \"$card_name\" at $front_url"

# --- Ask --------------------------------------------------------------------------------------

say "asking the front desk: $question"
body="$(python3 -c '
import json, sys, uuid
print(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {
    "messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": [{"text": sys.argv[1]}]}}}))
' "$question")"
response="$(rpc "$front_url" "$body")" ||
  fail "the front desk did not answer within ${answer_timeout} s"
error="$(printf '%s' "$response" | jget error)"
[ -z "$error" ] || fail "the front desk refused the question: $error"
task_id="$(printf '%s' "$response" | jget result task id)"
state="$(printf '%s' "$response" | jget result task status state)"
answer="$(printf '%s' "$response" | jget result task status message parts 0 text)"
[ "$state" = TASK_STATE_COMPLETED ] ||
  fail "the front desk's task $task_id ended $state: ${answer:-(no message)}"

printf '\nFront desk (task %s, %s):\n  %s\n' "$task_id" "$state" "$answer"

# The sub-task row the front desk recorded, then the child task itself, asked of the ledger.
get_task() {
  rpc "$1" "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"GetTask\",\"params\":{\"id\":\"$2\"}}"
}
parent="$(get_task "$front_url" "$task_id")"
child_id="$(printf '%s' "$parent" | jget result metadata "$ext_key" sub_tasks 0 task_id)"
child_agent="$(printf '%s' "$parent" | jget result metadata "$ext_key" sub_tasks 0 agent id)"
[ -n "$child_id" ] || fail "the front desk's task has no sub-task: it did not delegate"
[ "$child_agent" = ledger ] || fail "the front desk delegated to \"$child_agent\", not the ledger"

child="$(get_task "$ledger_url" "$child_id")"
error="$(printf '%s' "$child" | jget error)"
[ -z "$error" ] || fail "GetTask $child_id on the ledger failed: $error"
printf '\nSub-task on %s (task %s, %s):\n' "$child_agent" "$child_id" \
  "$(printf '%s' "$child" | jget result status state)"
printf '  name:   %s\n' "$(printf '%s' "$child" | jget result metadata "$ext_key" name)"
printf '  goal:   %s\n' "$(printf '%s' "$child" | jget result metadata "$ext_key" goal)"
printf '  answer: %s\n\n' "$(printf '%s' "$child" | jget result status message parts 0 text)"

ok=1
