-- cairn: idle maintenance.  Once Neovim has had no key typed for the idle
-- time (`settings.idleMinutes`, else 10 minutes, as in Emacs), every running
-- cairn server gets one `cairn/idle` notification; nothing repeats until a
-- key is typed again.  The server decides what to do with it (its own
-- idleMinutes applies).  Started with the first server, never on load.
local config = require("cairn.config")

local M = {}

local ns -- the vim.on_key namespace, once started
local timer -- the uv timer waiting for the idle time
local armed = false -- the timer runs
local last = 0 -- vim.loop.now() of the last key typed (or of the start)
M.fired = false -- an opportunity was offered in this idle period
M.sent = 0 -- cairn/idle notifications sent (for :checkhealth and the tests)

--- The idle time in ms: `settings.idleMinutes` when set, else 10 minutes.
function M.delay()
  local minutes = tonumber(config.opts.settings and config.opts.settings.idleMinutes) or 10
  return math.max(0, math.floor(minutes * 60000))
end

local function arm(ms)
  if timer then
    armed = true
    timer:stop()
    timer:start(math.max(ms, 0), 0, vim.schedule_wrap(M.check))
  end
end

--- Idle long enough: offer every running server one maintenance opportunity; else wait the rest.
--- With no server running yet nothing is offered: a server that finishes starting calls this again.
function M.check()
  armed = false
  local elapsed = vim.loop.now() - last
  local delay = M.delay()
  if M.fired or not timer then
    return
  end
  if elapsed < delay then
    return arm(delay - elapsed)
  end
  local lsp = require("cairn.lsp")
  local clients = lsp.running()
  if #clients == 0 then
    return
  end
  M.fired = true
  for _, client in ipairs(clients) do
    pcall(lsp.call, client, "notify", "cairn/idle", { seconds = elapsed / 1000 })
    M.sent = M.sent + 1
  end
end

-- A key typed: a new idle period starts (typing costs an assignment while the timer runs).
local function on_key()
  last = vim.loop.now()
  M.fired = false
  if not armed then
    arm(M.delay())
  end
end

--- Start watching for idleness (idempotent).
function M.start()
  if timer then
    return
  end
  timer = vim.loop.new_timer()
  ns = vim.api.nvim_create_namespace("cairn.idle")
  vim.on_key(on_key, ns)
  last = vim.loop.now()
  M.fired = false
  arm(M.delay())
end

--- The idle time changed (settings): wait the new time from the last key.
function M.rearm()
  if timer and not M.fired then
    arm(M.delay() - (vim.loop.now() - last))
  end
end

--- Stop watching (the tests; nothing else needs it).
function M.stop()
  if timer then
    timer:stop()
    timer:close()
    timer = nil
    armed = false
  end
  if ns then
    vim.on_key(nil, ns)
  end
end

return M
