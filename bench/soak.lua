-- soak.lua - wrk script of bench/soak.py: POSTs $SOAK_BODY as JSON and counts
-- every response status; at the end prints one line "SOAK_JSON {...}" with
-- the totals, the socket errors, latency percentiles (microseconds) and the
-- count of each status across all threads.
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = os.getenv("SOAK_BODY") or "{}"

-- With $SOAK_REQUESTS_FILE (lines "PATH<TAB>BODY"), each request is the next of them, in turn
-- (bench/soak.py --endpoints mixed); each thread starts at its own place in the list.
local mixed = {}
local requests_file = os.getenv("SOAK_REQUESTS_FILE")
if requests_file then
  for line in io.lines(requests_file) do
    local path, body = string.match(line, "^([^\t]+)\t(.*)$")
    if path then
      mixed[#mixed + 1] = {path, body}
    end
  end
end
local next_index = 1
local thread_count = 0

local threads = {}

function setup(thread)
  table.insert(threads, thread)
  thread_count = thread_count + 1
  thread:set("start", thread_count * 997)
end

function init(args)
  statuses = {}
  next_index = (start or 1)
end

if #mixed > 0 then
  function request()
    local r = mixed[(next_index % #mixed) + 1]
    next_index = next_index + 1
    return wrk.format("POST", r[1], nil, r[2])
  end
end

function response(status, headers, body)
  statuses[status] = (statuses[status] or 0) + 1
end

function done(summary, latency, requests)
  local counts = {}
  for _, t in ipairs(threads) do
    for k, v in pairs(t:get("statuses")) do
      counts[k] = (counts[k] or 0) + v
    end
  end
  local parts = {}
  for k, v in pairs(counts) do
    parts[#parts + 1] = string.format('"%d": %d', k, v)
  end
  local e = summary.errors
  io.write(string.format(
    'SOAK_JSON {"duration_us": %d, "requests": %d, "bytes": %d, ' ..
    '"errors": {"connect": %d, "read": %d, "write": %d, "status": %d, "timeout": %d}, ' ..
    '"latency_us": {"p50": %d, "p90": %d, "p99": %d, "max": %d, "mean": %.1f}, "statuses": {%s}}\n',
    summary.duration, summary.requests, summary.bytes, e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max, latency.mean,
    table.concat(parts, ", ")))
end
