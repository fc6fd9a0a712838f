-- One read-load client (benchmarks/service.py --read-load), run by wrk with one thread
-- per connection, so this script's state is one client's.
--
-- READ_CLIENT_TOKEN=... wrk -t N -c N -s _read_client.lua URL -- MODE PATH [IDS_FILE] [THINK_MS]
--   MODE fixed:  GET PATH every time
--   MODE pages:  GET PATH, then follow the answer's "next" cursor ten pages deep, again
--   MODE one_of: GET PATH with its "{}" replaced by a random line of IDS_FILE
-- At the end one JSON line: requests, errors (any non-2xx answer, timeout or socket
-- error) and latency percentiles in milliseconds.

local mode, path, think_ms
local ids = {}
local depth, cursor = 0, nil

function init(args)
  -- the bearer token comes from the environment, so no process listing shows it
  wrk.headers["Authorization"] = "Bearer " .. os.getenv("READ_CLIENT_TOKEN")
  mode, path = args[1], args[2]
  think_ms = tonumber(args[4] or "0") or 0
  if mode == "one_of" then
    for line in io.lines(args[3]) do
      ids[#ids + 1] = line
    end
  end
  math.randomseed(os.time() + math.floor(os.clock() * 1e6) + tostring({}):len())
end

function request()
  local p = path
  if mode == "one_of" then
    local id = ids[math.random(#ids)]
    local at = string.find(path, "{}", 1, true)
    p = string.sub(path, 1, at - 1) .. id .. string.sub(path, at + 2)
  elseif mode == "pages" then
    if depth >= 10 or (depth > 0 and cursor == nil) then
      depth, cursor = 0, nil
    end
    depth = depth + 1
    if cursor ~= nil then
      local sep = string.find(path, "?", 1, true) and "&" or "?"
      p = path .. sep .. "cursor=" .. cursor
    end
  end
  return wrk.format("GET", p)
end

function response(status, headers, body)
  if mode == "pages" then
    cursor = status == 200 and string.match(body, '"next":"([^"]*)"') or nil
  end
end

function delay()
  -- a person or a polling front end pausing after each answer (0: a closed loop)
  return think_ms * (0.5 + math.random())
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    '{"requests": %d, "errors": %d, "p50_ms": %.3f, "p99_ms": %.3f, "max_ms": %.3f}\n',
    summary.requests,
    e.connect + e.read + e.write + e.status + e.timeout,
    latency:percentile(50) / 1000,
    latency:percentile(99) / 1000,
    latency.max / 1000
  ))
end
