-- wrk script of bench-serve.sh: GET the paths of a list in turn, and print the figures.
--
--   wrk -t2 -c16 -d10s --latency -s scripts/bench/serve_wrk.lua http://127.0.0.1:PORT -- PATHS_FILE 2
--
-- PATHS_FILE holds one path (with its query) a line; the last argument is wrk's -t. Each
-- wrk thread walks the whole list in a loop, request i of the thread asking for path
-- (start + i) mod n, the threads starting at evenly spaced places so that they do not ask
-- for the same path at once.
-- At the end, prints one line for bench-serve.sh:
--   wrk-result requests=N bytes=B duration_us=D connect=C read=R write=W timeout=T
--              status=S p50_us=P p99_us=Q
-- (status: responses other than 2xx or 3xx; bytes: whole responses, headers included).

local started = 0
local index = 0

function setup(thread)
    thread:set("thread_number", started)
    started = started + 1
end

local paths = {}

function init(args)
    local file = assert(io.open(args[1], "r"), "cannot open the paths file " .. tostring(args[1]))
    for line in file:lines() do
        if line ~= "" then paths[#paths + 1] = line end
    end
    file:close()
    assert(#paths > 0, "the paths file is empty")
    local count = tonumber(args[2]) or 1
    index = math.floor((thread_number or 0) * #paths / count)
end

function request()
    local path = paths[(index % #paths) + 1]
    index = index + 1
    return wrk.format("GET", path)
end

function done(summary, latency, requests)
    local e = summary.errors
    io.write(string.format(
        "wrk-result requests=%d bytes=%d duration_us=%d connect=%d read=%d write=%d timeout=%d status=%d p50_us=%d p99_us=%d\n",
        summary.requests, summary.bytes, summary.duration, e.connect, e.read, e.write, e.timeout, e.status,
        latency:percentile(50), latency:percentile(99)))
end
