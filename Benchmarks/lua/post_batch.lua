-- wrk script: POST /downloads/batch, `items` jobs a request, each with a unique destination.
-- args: origin-url prefix session earliestBeginDate items
-- A response counts as failed unless it is 200 and every item in it is 201.
dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "threads.lua")

function init(args)
  origin, prefix, session, earliest = args[1], args[2], args[3], args[4]
  items = tonumber(args[5])
  sent, failed = 0, 0
end

function request()
  sent = sent + 1
  local body = '{"items":[' .. joined(items, function(i)
    return '{"url":"' .. origin .. '","destination":"' .. prefix .. "/" .. tid .. "/" .. sent .. "/" .. i ..
      '","session":"' .. session .. '","earliestBeginDate":"' .. earliest .. '"}'
  end) .. ']}'
  return wrk.format("POST", "/downloads/batch", {["Content-Type"] = "application/json"}, body)
end

-- Each item of the answer opens with {"status": — searched from '{', which is rare in the body (a
-- search from '"' stops at every quote of 1,000 jobs, and costs the client more than the server).
function response(status, headers, body)
  if status ~= 200 or string.find(body, '{"status":4', 1, true) or string.find(body, '{"status":5', 1, true) then
    failed = failed + 1
  end
end
