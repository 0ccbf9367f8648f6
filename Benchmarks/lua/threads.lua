-- Shared by the wrk scripts here, loaded with dofile: numbers the threads (each sees its own as
-- `tid`) and, at the end, prints the sum of their `failed` counts as "bench-failed N".
local threads, next_id = {}, 1

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
