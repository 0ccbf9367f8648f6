-- wrk script: aria2 JSON-RPC system.multicall of `items` aria2.addUri calls a request, paused
-- (nothing downloads), a unique output per call.
-- args: origin-url prefix items
dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "threads.lua")

function init(args)
  origin, prefix, items = args[1], args[2], tonumber(args[3])
  sent, failed = 0, 0
end

function request()
  sent = sent + 1
  local calls = joined(items, function(i)
    return '{"methodName":"aria2.addUri","params":[["' .. origin .. '"],{"pause":"true","out":"' ..
      prefix .. "-" .. tid .. "-" .. sent .. "-" .. i .. '"}]}'
  end)
  local body = '{"jsonrpc":"2.0","id":"' .. sent .. '","method":"system.multicall","params":[[' .. calls .. ']]}'
  return wrk.format("POST", "/jsonrpc", {["Content-Type"] = "application/json"}, body)
end

function response(status, headers, body)
  if status ~= 200 or string.find(body, '"code"', 1, true) then failed = failed + 1 end
end
