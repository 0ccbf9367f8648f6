-- wrk script: POST /downloads with a unique destination per request.
-- args: origin-url prefix session earliestBeginDate [max-requests-per-thread, 0 = no limit]
-- Once a thread has sent its maximum it stops; the driver watches the queue and ends wrk.
dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "threads.lua")

function init(args)
  origin, prefix, session, earliest = args[1], args[2], args[3], args[4]
  limit = tonumber(args[5] or "0")
  sent, failed = 0, 0
end

function request()
  if limit > 0 and sent >= limit then
    wrk.thread:stop()
    return wrk.format("GET", "/healthz")
  end
  sent = sent + 1
  local name = prefix .. "/" .. tid .. "/" .. sent
  local body = '{"url":"' .. origin .. '","destination":"' .. name .. '","session":"' .. session ..
    '","earliestBeginDate":"' .. earliest .. '"}'
  return wrk.format("POST", "/downloads", {["Content-Type"] = "application/json"}, body)
end

function response(status, headers, body)
  if status ~= 201 and status ~= 200 then failed = failed + 1 end
end
