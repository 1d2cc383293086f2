-- cairn for Neovim (0.7.2 and later): start `cairn serve` for memory and
-- instruction files and expose the cairn commands.  Pending proposals then
-- appear as diagnostics, and `vim.lsp.buf.code_action()` offers accept /
-- reject / show diff on them.
--
--   require("cairn").setup({ settings = { mode = "propose", idleMinutes = 10 } })
--
-- Commands: :CairnStatus, :CairnDrain (progress and its end echoed),
-- :CairnProposals (the quickfix list), :CairnAccept ID..., :CairnReject ID...,
-- :CairnShow ID (a named diff buffer), :CairnUndo ID; proposal ids complete
-- with <Tab>.  require("cairn").statusline() is a statusline component
-- ("cairn:3" with three pending proposals).  After a server crash the client
-- restarts for the open memory files (and on the next command).  An AI
-- plugin feeds turns with require("cairn").turn_completed{...} and ends
-- sessions with require("cairn").session_event(session_id, kind).
--
-- One server per workspace root: Neovim 0.8+ reuses it through
-- `vim.lsp.start`; on 0.7 this module keeps the root -> client id table.
local M = {}

M.defaults = {
  cmd = { "cairn", "serve" },
  cmd_env = nil, -- extra environment for the server process
  root_markers = { ".git", ".cairn", ".agents" },
  -- server settings (names as in the cairn LSP contract): only what you set
  -- here is sent, so the workspace's .cairn/config.toml and your cairn
  -- config apply otherwise (e.g. { mode = "auto", idleMinutes = 5 })
  settings = {},
  -- files opened as memory files besides .agents/memory/*.md and MEMORY.md
  -- (the server's instruction files come from `settings.instructionFiles`)
  instruction_files = { "AGENTS.md", "CLAUDE.md" },
}

local opts = vim.deepcopy(M.defaults)
local clients_by_root = {} -- 0.7 only: root_dir -> client id
local last_status = {} -- root_dir -> last cairn/status answer (statusline)

local function notify(msg, level)
  vim.notify("cairn: " .. msg, level or vim.log.levels.INFO)
end

-- Client methods are called with ':' from 0.11 on, with '.' before.
local function call(client, method, ...)
  if vim.fn.has("nvim-0.11") == 1 then
    return client[method](client, ...)
  end
  return client[method](...)
end

--- True for `.agents/memory/*.md`, any `MEMORY.md` and the instruction files.
function M.is_memory_file(path)
  if path:match("/%.agents/memory/[^/]+%.md$") or path:match("/MEMORY%.md$") then
    return true
  end
  local name = vim.fn.fnamemodify(path, ":t")
  return vim.tbl_contains(opts.settings.instructionFiles or opts.instruction_files or {}, name)
end

--- The nearest directory above `path` holding a root marker (else the file's directory).
function M.root_of(path)
  local start = vim.fn.fnamemodify(path, ":p:h")
  local dir = start
  while true do
    for _, marker in ipairs(opts.root_markers) do
      if vim.loop.fs_stat(dir .. "/" .. marker) then
        return dir
      end
    end
    local parent = vim.fn.fnamemodify(dir, ":h")
    if parent == dir then
      return start
    end
    dir = parent
  end
end

--- The cairn client attached to `bufnr` (0: current), else any running cairn client.
function M.client(bufnr)
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  local get = vim.lsp.get_clients or vim.lsp.get_active_clients
  local any
  for _, client in ipairs(get()) do
    if client.name == "cairn" then
      if client.attached_buffers and client.attached_buffers[bufnr] then
        return client
      end
      any = any or client
    end
  end
  return any
end

local function is_stopped(client)
  if vim.fn.has("nvim-0.11") == 1 then
    return client:is_stopped()
  end
  return client.is_stopped()
end

local need_client -- defined below M.attach

local function show_diff(result)
  if type(result) ~= "table" or type(result.diff) ~= "string" then
    return
  end
  local name = "cairn://proposal/" .. tostring(result.id or "?")
  local existing = vim.fn.bufnr("^" .. vim.pesc(name) .. "$")
  if existing ~= -1 then
    vim.api.nvim_buf_delete(existing, { force = true })
  end
  vim.cmd("new")
  local buf = vim.api.nvim_get_current_buf()
  vim.api.nvim_buf_set_name(buf, name)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, vim.split(result.diff, "\n", { plain = true }))
  vim.bo[buf].buftype = "nofile"
  vim.bo[buf].bufhidden = "wipe"
  vim.bo[buf].filetype = "diff"
  vim.bo[buf].modifiable = false
end

-- Drain progress: echo begin and end (report messages replace each other).
local function on_progress(err, result, ctx, config)
  local default = vim.lsp.handlers["$/progress"]
  if default then
    pcall(default, err, result, ctx, config)
  end
  local value = result and result.value
  if type(value) ~= "table" then
    return
  end
  if value.kind == "begin" then
    local title = (value.title or "cairn"):gsub("^cairn: ", "")
    notify(title .. (value.message and (": " .. value.message) or ""))
  elseif value.kind == "report" then
    vim.api.nvim_echo({ { "cairn: " .. (value.message or "") .. (value.percentage and
      string.format(" (%d%%)", value.percentage) or "") } }, false, {})
  elseif value.kind == "end" then
    notify("drain done: " .. (value.message or ""))
    M.status(function() end)
  end
end

--- Send a request to the cairn server; `on_result(err, result)` gets the answer.
function M.request(method, params, on_result, bufnr)
  local client = need_client(bufnr)
  if not client then
    return false
  end
  params.workspace = params.workspace or client.config.root_dir
  return call(client, "request", method, params, function(err, result)
    on_result(err, result)
  end, bufnr or 0)
end

--- Send a notification to the cairn server (workspace defaults to the client's root).
function M.notify(method, params, bufnr)
  local client = need_client(bufnr)
  if not client then
    return false
  end
  params.workspace = params.workspace or client.config.root_dir
  return call(client, "notify", method, params)
end

--- Run cairn command `name` with its single argument object.  Without
--- `on_result` the outcome is shown and buffers are reloaded (`:checktime`).
function M.command(name, argument, on_result, bufnr)
  argument = argument or {}
  return M.request("workspace/executeCommand", { command = name, arguments = { argument } }, function(err, result)
    if on_result then
      return on_result(err, result)
    end
    if err then
      notify(err.message or tostring(err), vim.log.levels.ERROR)
    elseif name ~= "cairn.drainBacklog" then
      notify(name .. " done")
      vim.cmd("checktime") -- reload memory buffers the command rewrote
    end
  end, bufnr)
end

--- `cairn/status`; without `on_result` the counts are shown.
function M.status(on_result, bufnr)
  return M.request("cairn/status", {}, function(err, st)
    if not err and type(st) == "table" and st.workspace then
      last_status[st.workspace] = st
    end
    if on_result then
      return on_result(err, st)
    end
    if err then
      return notify(err.message or tostring(err), vim.log.levels.ERROR)
    end
    notify(string.format("%d proposals, %s mode | pending %d running %d retry %d attention %d exhausted %d digests %d",
      st.proposals, tostring(st.mode or "?"), st.pending, st.running, st.retryWaiting, st.attention,
      st.exhausted, st.digests))
  end, bufnr)
end

--- Statusline component: "cairn:N" with N pending proposals, "cairn" otherwise,
--- "" without a cairn server.  Counts come from the last status answer.
function M.statusline()
  local client = M.client(0)
  if not client then
    return ""
  end
  local st = last_status[client.config.root_dir]
  if st and type(st.proposals) == "number" and st.proposals > 0 then
    return "cairn:" .. st.proposals
  end
  return "cairn"
end

--- Pending proposals (cockpit rows) now, or {} (for completion; waits at most 2 s).
function M.candidates(bufnr)
  local client = M.client(bufnr)
  if not client then
    return {}
  end
  local answer = call(client, "request_sync", "cairn/cockpit",
    { workspace = client.config.root_dir, view = "candidates" }, 2000, bufnr or 0)
  return (answer and type(answer.result) == "table") and answer.result or {}
end

local function complete_ids(arglead)
  local out = {}
  for _, row in ipairs(M.candidates()) do
    if type(row.id) == "string" and row.id:sub(1, #arglead) == arglead then
      table.insert(out, row.id)
    end
  end
  return out
end

--- Fill the quickfix list with the pending proposals (one entry each, at its
--- target) and open it; `on_done(items)` instead of opening when given.
function M.proposals(on_done, bufnr)
  return M.request("cairn/cockpit", { view = "candidates" }, function(err, rows)
    if err then
      return notify(err.message or tostring(err), vim.log.levels.ERROR)
    end
    local client = M.client(bufnr)
    local root = client and client.config.root_dir or vim.loop.cwd()
    local items = {}
    for _, row in ipairs(rows or {}) do
      local target = tostring(row.target or "")
      table.insert(items, {
        filename = target:sub(1, 1) == "/" and target or (root .. "/" .. target),
        lnum = 1,
        text = string.format("%s [%s %s] %s", row.id, row.kind or "?", row.state or "?", row.title or ""),
      })
    end
    vim.fn.setqflist({}, " ", { title = "cairn proposals", items = items })
    if on_done then
      return on_done(items)
    end
    if #items == 0 then
      notify("no pending proposals")
    else
      vim.cmd("copen")
    end
  end, bufnr)
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
--- classify the text.  Without `on_result` the proposals made for it are
--- shown (accept or reject them with :CairnAccept / :CairnReject).
function M.remember(text, note_type, on_result, bufnr)
  local argument = { text = text, type = note_type, source = "nvim" }
  return M.command("cairn.remember", argument, on_result or function(err, answer)
    if err then
      return notify(err.message or tostring(err), vim.log.levels.ERROR)
    end
    local result = (answer or {}).result or {}
    local lines = {}
    for _, p in ipairs(result.proposals or {}) do
      table.insert(lines, string.format("%s %s: %s", p.id, p.state, p.title))
    end
    if #lines == 0 then
      table.insert(lines, result.reviewed and "remembered; no new proposal (memory holds it, or it was rejected)"
        or "remembered; its proposal follows from the review running now")
    end
    notify(table.concat(lines, "\n"))
    vim.cmd("checktime") -- auto mode applied it: reload memory buffers
  end, bufnr)
end

-- :CairnRemember [type=TYPE] [TEXT]: TEXT, else the lines of the range
local function remember_command(a)
  local args = vim.deepcopy(a.fargs)
  local note_type
  if args[1] and args[1]:match("^type=") then
    note_type = table.remove(args, 1):sub(6)
  end
  local text = table.concat(args, " ")
  if text == "" and a.range > 0 then
    text = table.concat(vim.api.nvim_buf_get_lines(0, a.line1 - 1, a.line2, false), "\n")
  end
  M.remember(text, note_type)
end

local function client_config(root)
  return {
    name = "cairn",
    cmd = opts.cmd,
    cmd_env = opts.cmd_env,
    root_dir = root,
    -- only the settings the user set (an empty object otherwise)
    init_options = next(opts.settings) and opts.settings or vim.empty_dict(),
    -- sent as workspace/didChangeConfiguration (0.8+): keep the settings under
    -- "cairn" so an empty configuration never replaces the initializationOptions
    settings = { cairn = next(opts.settings) and opts.settings or vim.empty_dict() },
    get_language_id = function()
      return "markdown"
    end,
    handlers = {
      ["$/progress"] = on_progress,
      -- code actions run their commands through this handler
      ["workspace/executeCommand"] = function(err, result, ctx)
        local command = ctx.params and ctx.params.command
        if err then
          notify(err.message or tostring(err), vim.log.levels.ERROR)
        elseif command == "cairn.showProposal" then
          show_diff(result)
        elseif command == "cairn.accept" or command == "cairn.reject" or command == "cairn.undo" then
          vim.cmd("checktime")
        end
      end,
    },
    on_exit = function(code, signal)
      clients_by_root[root] = nil
      if code ~= 0 or (signal or 0) ~= 0 then
        -- a crash (not a shutdown): restart for the memory buffers still open
        vim.schedule(function()
          notify(string.format("the server exited (code %s, signal %s); restarting", tostring(code),
            tostring(signal)), vim.log.levels.WARN)
          M.restart(root)
        end)
      end
    end,
  }
end

--- Re-attach the loaded memory buffers under `root` (starting the server).
function M.restart(root)
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    local path = vim.api.nvim_buf_get_name(buf)
    if vim.api.nvim_buf_is_loaded(buf) and path ~= "" and M.is_memory_file(path) and M.root_of(path) == root then
      M.attach(buf, root)
    end
  end
end

--- Attach `bufnr` to the cairn server of `root`, starting it when needed.
function M.attach(bufnr, root)
  if vim.lsp.start then
    return vim.lsp.start(client_config(root), { bufnr = bufnr })
  end
  local id = clients_by_root[root]
  local client = id and vim.lsp.get_client_by_id(id)
  if not client or client.is_stopped() then
    id = vim.lsp.start_client(client_config(root))
    if not id then
      return notify("could not start " .. table.concat(opts.cmd, " "), vim.log.levels.ERROR)
    end
    clients_by_root[root] = id
  end
  vim.lsp.buf_attach_client(bufnr, id)
  return id
end

need_client = function(bufnr)
  local client = M.client(bufnr)
  if client and not is_stopped(client) then
    return client
  end
  -- no server (it crashed, say) but a memory file is open: start it again
  local buf = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  local path = vim.api.nvim_buf_get_name(buf)
  if path ~= "" and M.is_memory_file(path) then
    M.attach(buf, M.root_of(path))
    vim.wait(10000, function()
      local c = M.client(buf)
      return c ~= nil and c.initialized
    end, 20)
    client = M.client(buf)
    if client then
      return client
    end
  end
  notify("no cairn server is running (open a memory file first)", vim.log.levels.WARN)
end

function M.setup(user_opts)
  opts = vim.tbl_deep_extend("force", vim.deepcopy(M.defaults), user_opts or {})
  local group = vim.api.nvim_create_augroup("cairn", { clear = true })
  vim.api.nvim_create_autocmd({ "BufReadPost", "BufNewFile" }, {
    group = group,
    pattern = "*.md",
    callback = function(args)
      local path = vim.api.nvim_buf_get_name(args.buf)
      if M.is_memory_file(path) then
        M.attach(args.buf, M.root_of(path))
      end
    end,
  })
  local function user_command(name, fn, extra)
    vim.api.nvim_create_user_command(name, fn, vim.tbl_extend("force", { desc = "cairn" }, extra or {}))
  end
  local ids = { nargs = "+", complete = complete_ids }
  user_command("CairnAccept", function(a) M.command("cairn.accept", { ids = a.fargs }) end, ids)
  user_command("CairnReject", function(a) M.command("cairn.reject", { ids = a.fargs }) end, ids)
  user_command("CairnShow", function(a)
    M.request("cairn/proposal", { id = a.args }, function(err, result)
      if err then
        return notify(err.message or tostring(err), vim.log.levels.ERROR)
      end
      show_diff(result)
    end)
  end, { nargs = 1, complete = complete_ids })
  user_command("CairnProposals", function() M.proposals() end)
  user_command("CairnUndo", function(a) M.command("cairn.undo", { id = a.args }) end, { nargs = 1 })
  user_command("CairnDrain", function()
    M.command("cairn.drainBacklog", {}, function(err)
      if err then
        notify(err.message or tostring(err), vim.log.levels.ERROR)
      end
    end)
  end)
  user_command("CairnReview", function() M.command("cairn.review", {}) end)
  user_command("CairnStatus", function() M.status() end)
  user_command("CairnRemember", remember_command, { nargs = "*", range = true })
  -- Neovim has no idle timer: send cairn/idle yourself if you want idle
  -- maintenance, e.g. M.notify("cairn/idle", { seconds = 600 }) from CursorHold.
end

return M
