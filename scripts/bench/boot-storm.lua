-- wrk script for the boot storm: every request picks one of the fleet's paths at random.
-- The paths (one per line, e.g. /boot-vars?mac=...&hostname=...) come from the file named
-- by BENCH_PATHS, written by scripts/bench-boot-vars.ts. Requests are pre-formatted in
-- init() so wrk spends no time building strings during the run.
local requests = {}
local count = 0

function init(args)
  local file = os.getenv("BENCH_PATHS")
  if file == nil then error("BENCH_PATHS is not set") end
  for line in io.lines(file) do
    if line ~= "" then
      count = count + 1
      requests[count] = wrk.format("GET", line)
    end
  end
  if count == 0 then error("no paths in " .. file) end
  math.randomseed(os.time() + (tonumber(tostring({}):match("0x(%x+)"), 16) or 0) % 100000)
end

function request()
  return requests[math.random(count)]
end
