-- cairn for Neovim (0.7.2 and later): the cockpit, the commands and the
-- statusline of cairn, over `cairn serve` (one server per workspace root).
-- See :help cairn.  The user commands come from plugin/cairn.lua; setup()
-- is needed only to change the options:
--
--   require("cairn").setup({ settings = { mode = "propose", idleMinutes = 10 } })
local M = {}
-- loaded as `require("cairn")` or by dofile() of the old single file: one instance either way
package.loaded["cairn"] = M

local config = require("cairn.config")
local lsp = require("cairn.lsp")
local status = require("cairn.status")
local commands = require("cairn.commands")

M.defaults = config.defaults
M.is_memory_file = config.is_memory_file
M.root_of = config.root_of
M.client = lsp.client
M.attach = lsp.attach
M.restart = lsp.restart
M.statusline = status.statusline

local function root_of(bufnr)
  return config.root_of_buf(bufnr or 0)
end

--- Send a request to the cairn server of the buffer's workspace (started when
--- needed); `on_result(err, result)` gets the answer.
function M.request(method, params, on_result, bufnr)
  return lsp.request(root_of(bufnr), method, params, on_result)
end

--- Send a notification to the cairn server (workspace defaults to the server's root).
function M.notify(method, params, bufnr)
  return lsp.notify(root_of(bufnr), method, params)
end

local DECISIONS = { ["cairn.accept"] = true, ["cairn.reject"] = true, ["cairn.undo"] = true,
  ["cairn.acceptEdited"] = true, ["cairn.unreject"] = true }

--- Run cairn command `name` with its single argument object.  Without
--- `on_result` the outcome is shown (a decision names its ids and their
--- state; `cairn.review` says it is queued), and after a decision the
--- workspace's buffers are reloaded and the views refreshed.
function M.command(name, argument, on_result, bufnr)
  local ws = root_of(bufnr)
  return commands.execute(ws, name, argument or {}, function(err, result)
    if on_result then
      if not err and DECISIONS[name] then
        commands.reload(ws, commands.written(result))
        status.schedule(ws)
      end
      return on_result(err, result)
    end
    if err then
      config.notify(config.error_text(err), vim.log.levels.ERROR)
    elseif DECISIONS[name] then
      commands.after_decision(ws, name, result, commands.ids_of(argument))
    elseif name == "cairn.wireAgents" then
      config.notify(commands.wire_message(result))
      status.schedule(ws)
    elseif name ~= "cairn.drainBacklog" then
      config.notify(commands.command_message(name, result))
    end
  end)
end

--- `cairn/status`; without `on_result` the counts are shown.
function M.status(on_result, bufnr)
  return status.status(root_of(bufnr), function(err, st)
    if on_result then
      return on_result(err, st)
    end
    if err then
      return config.notify(config.error_text(err), vim.log.levels.ERROR)
    end
    config.notify(status.summary(st))
  end)
end

--- Pending proposals (cockpit rows) now, or {} (for completion; waits a few seconds at most).
function M.candidates(bufnr)
  return commands.rows_sync("candidates", root_of(bufnr))
end

--- Fill the quickfix list with the pending proposals (one entry each, at its
--- target; refreshed when they change) and open it; `on_done(items)` instead
--- of opening when given.
function M.proposals(on_done, bufnr)
  if on_done then
    return status.proposals(root_of(bufnr), on_done)
  end
  return commands.proposals_command()
end

--- Open the cockpit on `view` ("pending", "history", "journal", "jobs" or
--- "memories"); `on_done(buf)` once its rows are drawn.
function M.cockpit(view, on_done)
  return require("cairn.cockpit").open(nil, view, on_done)
end

--- Edit pending proposal `id` before accepting it (`:w` in the buffer accepts).
function M.edit(id, on_open)
  return require("cairn.cockpit").edit(root_of(0), id, on_open)
end

--- Feed one completed turn: `turn` = {sessionId, turnId, parentTurnId?, user,
--- assistant, completedAt, workspace?} as in the cairn LSP contract.
function M.turn_completed(turn, bufnr)
  return M.notify("cairn/turnCompleted", vim.deepcopy(turn), bufnr)
end

--- End or compact a session: kind is "compaction", "clear" or "session-end".
function M.session_event(session_id, kind, bufnr)
  return M.notify("cairn/sessionEvent", { sessionId = session_id, kind = kind }, bufnr)
end

M.remember_types = { "user", "feedback", "project", "reference" }

--- Remember `text` now: the server captures it and reviews it at once.
--- `note_type` is one of `M.remember_types`, or nil to let the server
--- classify the text.  Without `on_result` the proposals made for it are shown.
function M.remember(text, note_type, on_result, bufnr)
  local ws = root_of(bufnr)
  local argument = { text = text, type = note_type, source = "nvim" }
  return commands.execute(ws, "cairn.remember", argument, function(err, answer)
    if not err then
      commands.reload(ws) -- auto mode applied it
      status.schedule(ws)
    end
    if on_result then
      return on_result(err, answer)
    end
    if err then
      return config.notify(config.error_text(err), vim.log.levels.ERROR)
    end
    config.notify(commands.remember_message(answer))
  end)
end

--- Replace the editor's server settings and send them to the running
--- servers: a setting you set before and leave out now (or set to vim.NIL)
--- is sent as null, so the config files' value applies again.
function M.configure(settings)
  local kept = {}
  for k, v in pairs(settings or {}) do
    if v ~= vim.NIL then
      kept[k] = vim.deepcopy(v)
    end
  end
  config.opts.settings = kept
  local change = lsp.change_settings(settings or {})
  require("cairn.idle").rearm()
  return change
end

--- Set one server setting; `value` nil (or vim.NIL) unsets it (the config files decide again).
function M.set(key, value)
  local settings = {}
  for k, v in pairs(config.opts.settings or {}) do
    settings[k] = v
  end
  settings[key] = value
  return M.configure(settings)
end

--- Options (see :help cairn-setup).  Calling it again sends changed settings
--- to the running servers (an option left out returns to the config files).
function M.setup(user_opts)
  local before = vim.deepcopy(config.opts.settings or {})
  config.set(user_opts)
  commands.define()
  if next(lsp.clients) ~= nil and not vim.deep_equal(before, config.opts.settings) then
    M.configure(config.opts.settings)
  end
  require("cairn.idle").rearm() -- idle maintenance: see lua/cairn/idle.lua
  return M
end

return M
