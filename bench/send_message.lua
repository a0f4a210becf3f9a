-- wrk script: every request a JSON-RPC SendMessage (A2A 1.0) with a fresh messageId, so each
-- one creates a new task rather than returning the task an earlier one created.
--   BENCH_EXPECT=TASK_STATE_COMPLETED wrk -t2 -c32 -d10s -s bench/send_message.lua http://127.0.0.1:8080/
-- BENCH_TEXT: the text sent (default a one-turn question).
-- BENCH_EXPECT: a string every answer's body must hold; answers without it are counted and
-- printed at the end as "unexpected answers" (default: "result", any JSON-RPC success).

local threads = {}
local text = os.getenv("BENCH_TEXT") or "direct: what is the answer?"
local expect = os.getenv("BENCH_EXPECT") or '"result"'

function setup(thread)
  table.insert(threads, thread)
  thread:set("tag", tostring(#threads) .. "-" .. tostring(os.time()))
end

function init(args)
  sent = 0
  unexpected = 0
  math.randomseed(os.time() * 1000 + #tag)
  tag = tag .. "-" .. tostring(math.random(1, 1000000000))
end

function request()
  sent = sent + 1
  local body = '{"jsonrpc":"2.0","id":' .. sent .. ',"method":"SendMessage","params":{"message":'
    .. '{"messageId":"wrk-' .. tag .. '-' .. sent .. '","role":"ROLE_USER",'
    .. '"parts":[{"text":"' .. text .. '"}]}}}'
  return wrk.format("POST", nil, {
    ["Content-Type"] = "application/json",
    ["A2A-Version"] = "1.0",
  }, body)
end

function response(status, headers, body)
  if status ~= 200 or not string.find(body, expect, 1, true) then
    unexpected = unexpected + 1
  end
end

function done(summary, latency, requests)
  local total = 0
  for _, thread in ipairs(threads) do
    total = total + thread:get("unexpected")
  end
  io.write(string.format("unexpected answers: %d (each answer must hold %s)\n", total, expect))
  io.write(string.format("latency p50 %.2f ms, p99 %.2f ms\n",
    latency:percentile(50) / 1000, latency:percentile(99) / 1000))
end
