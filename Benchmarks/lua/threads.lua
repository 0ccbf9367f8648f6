-- Shared by the wrk scripts here, loaded with dofile: numbers the threads (each sees its own as
-- `tid`) and, at the end, prints the sum of their `failed` counts as "bench-failed N".
local threads, next_id = {}, 1

-- `count` JSON values made by item(i), i = 1…count, joined with commas (a batch request's items).
function joined(count, item)
  local parts = {}
  for i = 1, count do parts[i] = item(i) end
  return table.concat(parts, ",")
end

function setup(thread)
  thread:set("tid", next_id)
  next_id = next_id + 1
  table.insert(threads, thread)
end

function done(summary, latency, requests)
  local total = 0
  for _, t in ipairs(threads) do total = total + t:get("failed") end
  print("bench-failed " .. total)
end
