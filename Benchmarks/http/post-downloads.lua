-- wrk script: POST /downloads with a destination unique per run, thread and request, a URL on
-- loopback and an earliestBeginDate far in the future, so every job is stored and none runs.
-- The run's name is the script's first argument (wrk ... -- NAME).

local threads = 0

function setup(thread)
    thread:set("thread_id", threads)
    threads = threads + 1
end

function init(args)
    run = args[1] or "run"
    counter = 0
end

function request()
    counter = counter + 1
    local body = string.format(
        '{"url":"http://127.0.0.1:9/file.bin","destination":"bench/%s/%d/%d.bin","earliestBeginDate":"2999-01-01T00:00:00Z"}',
        run, thread_id, counter)
    return wrk.format("POST", "/downloads", { ["Content-Type"] = "application/json" }, body)
end
