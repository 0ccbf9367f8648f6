-- wrk script: aria2 JSON-RPC aria2.addUri, paused (nothing downloads), a unique output per request.
-- args: origin-url prefix
dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "threads.lua")

function init(args)
  origin, prefix = args[1], args[2]
  sent, failed = 0, 0
end

function request()
  sent = sent + 1
  local name = prefix .. "-" .. tid .. "-" .. sent
  local body = '{"jsonrpc":"2.0","id":"' .. name .. '","method":"aria2.addUri","params":[["' .. origin ..
    '"],{"pause":"true","out":"' .. name .. '"}]}'
  return wrk.format("POST", "/jsonrpc", {["Content-Type"] = "application/json"}, body)
end

function response(status, headers, body)
  if status ~= 200 or string.find(body, '"error"', 1, true) then failed = failed + 1 end
end
