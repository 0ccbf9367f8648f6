-- wrk script for the small-files scenario: POST /downloads of <prefix>0.bin … <prefix>(count-1).bin,
-- each once, into <session>/f<n>.bin with a webhook; run it with one thread (-t 1).
-- args: url-prefix count session webhook-url [earliestBeginDate]
-- After the last POST the thread stops; the driver waits for the webhooks and then ends wrk.
dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "threads.lua")

function init(args)
  prefix, count, session, webhook, begin = args[1], tonumber(args[2]), args[3], args[4], args[5]
  -- With a begin date every job waits for it: the POSTs and the transfers can be timed apart.
  later = begin and (',"earliestBeginDate":"' .. begin .. '"') or ""
  -- wrk calls request() once before the run to check it (script_verify_request, on the first
  -- thread's state) and never sends that one: numbering starts at -1 so the files sent are 0…count-1.
  sent, failed = -1, 0
end

function request()
  if sent >= count then
    wrk.thread:stop()
    return wrk.format("GET", "/healthz")
  end
  local n = sent
  sent = sent + 1
  local body = '{"url":"' .. prefix .. n .. '.bin","destination":"' .. session .. '/f' .. n .. '.bin","session":"' ..
    session .. '","webhookURL":"' .. webhook .. '"' .. later .. '}'
  return wrk.format("POST", "/downloads", {["Content-Type"] = "application/json"}, body)
end

function response(status, headers, body)
  if status ~= 201 and status ~= 200 then failed = failed + 1 end
end
