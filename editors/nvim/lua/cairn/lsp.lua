-- cairn: one `cairn serve` client per workspace root, started on demand
-- (a command, the cockpit, an opened memory file), restarted after a crash.
local config = require("cairn.config")

local M = {}

M.clients = {} -- root -> client id (every Neovim version: the same table)
local waiting = {} -- root -> callbacks waiting for that root's client to initialize
M.listeners = {} -- functions(root): the server says the workspace changed (see status.lua)
local editor_settings = {} -- the settings last sent to the servers (for unsetting)
local crashes = {} -- root -> { since, count }: crashes of its server in the last minute
local log_offsets = {} -- root -> size of the LSP log when its server was started
local missing_reported = {} -- server programs already reported missing in this session

-- Client methods are called with ':' from 0.11 on, with '.' before.
local function call(client, method, ...)
  if vim.fn.has("nvim-0.11") == 1 then
    return client[method](client, ...)
  end
  return client[method](...)
end
M.call = call

function M.is_stopped(client)
  return call(client, "is_stopped")
end

local function all_clients()
  return (vim.lsp.get_clients or vim.lsp.get_active_clients)()
end

--- The running, initialized cairn client of `root`, else nil.
function M.client_of_root(root)
  local id = M.clients[root]
  local client = id and vim.lsp.get_client_by_id(id)
  if client and not M.is_stopped(client) then
    return client
  end
end

--- The cairn client attached to `bufnr` (0: current), else the client of its
--- workspace, else any running cairn client.
function M.client(bufnr)
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  local any
  for _, client in ipairs(all_clients()) do
    if client.name == "cairn" then
      if client.attached_buffers and client.attached_buffers[bufnr] then
        return client
      end
      any = any or client
    end
  end
  return M.client_of_root(config.root_of_buf(bufnr)) or any
end

-- Tell the listeners (statusline, quickfix, cockpit) that `root` changed.
local function changed(root)
  for _, fn in ipairs(M.listeners) do
    pcall(fn, root)
  end
end
M.changed = changed

-- Drain progress: echo begin and end (report messages replace each other).
local function on_progress(root)
  return function(err, result, ctx, cfg)
    local default = vim.lsp.handlers["$/progress"]
    if default then
      pcall(default, err, result, ctx, cfg)
    end
    local value = result and result.value
    if type(value) ~= "table" then
      return
    end
    if value.kind == "begin" then
      local title = (value.title or "cairn"):gsub("^cairn: ", "")
      config.notify(title .. (value.message and (": " .. value.message) or ""))
    elseif value.kind == "report" then
      vim.api.nvim_echo({ { "cairn: " .. (value.message or "") .. (value.percentage and
        string.format(" (%d%%)", value.percentage) or "") } }, false, {})
    elseif value.kind == "end" then
      config.notify("drain done: " .. (value.message or ""))
      changed(root)
    end
  end
end

-- A job's finish line ("cairn: JOB KIND STATUS ..."): sent once the server's status is fresh.
local function is_finish_line(message)
  local status = type(message) == "string" and message:match("^cairn: %S+ %S+ ([%a_-]+)")
  return status ~= nil and status ~= "started"
end
M.is_finish_line = is_finish_line

-- The size of Neovim's LSP log now (0 when there is none).
local function log_size()
  local ok, path = pcall(vim.lsp.get_log_path)
  local stat = ok and path and vim.loop.fs_stat(path)
  return stat and stat.size or 0
end

--- The last line `program` wrote on stderr since `offset` of the LSP log, or nil.  Neovim keeps a
--- server's stderr only there (`"rpc" "PROGRAM" "stderr" "CHUNK"`, at level ERROR, logged by default).
function M.last_stderr_line(program, offset)
  local ok, path = pcall(vim.lsp.get_log_path)
  local f = ok and path and io.open(path, "rb")
  if not f then
    return nil
  end
  f:seek("set", offset or 0)
  local data = f:read("*a") or ""
  f:close()
  local quoted = vim.inspect(program)
  local text = ""
  for line in data:gmatch("[^\n]+") do
    local chunk = line:find(quoted, 1, true) and line:match('"stderr"%s+(".*")%s*$')
    if chunk then
      local fn = load("return " .. chunk, "stderr", "t", {})
      local got = fn and select(2, pcall(fn))
      if type(got) == "string" then
        text = text .. got
      end
    end
  end
  local last
  for l in text:gmatch("[^\r\n]+") do
    if l:match("%S") then
      last = vim.trim(l)
    end
  end
  return last
end

local function client_config(root)
  local opts = config.opts
  local settings = {}
  for k, v in pairs(opts.settings or {}) do
    if v ~= vim.NIL then
      settings[k] = v
    end
  end
  editor_settings = vim.deepcopy(settings)
  return {
    name = "cairn",
    cmd = opts.cmd,
    cmd_env = opts.cmd_env,
    root_dir = root,
    -- only the settings the user set (an empty object otherwise)
    init_options = next(settings) and settings or vim.empty_dict(),
    -- sent as workspace/didChangeConfiguration (0.8+): keep the settings under
    -- "cairn" so an empty configuration never replaces the initializationOptions
    settings = { cairn = next(settings) and settings or vim.empty_dict() },
    get_language_id = function()
      return "markdown"
    end,
    handlers = {
      ["$/progress"] = on_progress(root),
      ["window/logMessage"] = function(err, result, ctx, cfg)
        pcall(vim.lsp.handlers["window/logMessage"], err, result, ctx, cfg)
        if type(result) == "table" and is_finish_line(result.message) then
          changed(root)
        end
        return result
      end,
      ["textDocument/publishDiagnostics"] = function(err, result, ctx, cfg)
        local default = vim.lsp.handlers["textDocument/publishDiagnostics"]
        local out = default and default(err, result, ctx, cfg)
        changed(root) -- the pending proposals changed (or a memory file was opened)
        return out
      end,
      -- code actions run their commands through this handler
      ["workspace/executeCommand"] = function(err, result, ctx)
        local command = ctx.params and ctx.params.command
        if err then
          config.notify(config.error_text(err), vim.log.levels.ERROR)
        elseif command == "cairn.showProposal" then
          require("cairn.cockpit").show_diff(result, root)
        elseif command == "cairn.wireAgents" then
          config.notify(require("cairn.commands").wire_message(result))
          changed(root)
        elseif command == "cairn.accept" or command == "cairn.reject" or command == "cairn.undo"
            or command == "cairn.unreject" or command == "cairn.acceptEdited" then
          local commands = require("cairn.commands")
          local arguments = ctx.params and ctx.params.arguments
          commands.after_decision(root, command, result, commands.ids_of(type(arguments) == "table" and arguments[1]))
        end
      end,
    },
    on_init = function(client)
      local fns = waiting[root] or {}
      waiting[root] = nil
      for _, fn in ipairs(fns) do
        vim.schedule(function()
          fn(client)
        end)
      end
      vim.schedule(function()
        changed(root) -- the statusline gets its first counts
        require("cairn.idle").check() -- an idle period that began before this server started
      end)
    end,
    on_exit = function(code, signal, client_id)
      if client_id == nil or M.clients[root] == client_id then
        M.clients[root] = nil
      end
      local fns = waiting[root] or {}
      waiting[root] = nil
      local program = config.opts.cmd and config.opts.cmd[1]
      local offset = log_offsets[root] or 0
      vim.schedule(function()
        -- the server's own word on why it stopped (E_CODE: reason), as the Emacs client shows it
        local said = (code ~= 0 or (signal or 0) ~= 0) and program and M.last_stderr_line(program, offset)
        local why = said and (": " .. said) or ""
        for _, fn in ipairs(fns) do
          fn(nil, string.format("the server exited before it started (code %s)%s", tostring(code), why))
        end
        changed(root)
        if code ~= 0 or (signal or 0) ~= 0 then
          -- a crash (not a shutdown): restart for the memory buffers still open, at most 3 times a minute
          local now, r = vim.loop.now(), crashes[root]
          if not r or now - r.since > 60000 then
            r = { since = now, count = 0 }
            crashes[root] = r
          end
          r.count = r.count + 1
          if r.count > 3 then
            return config.notify(string.format("the server exited (code %s, signal %s) %d times in a minute; "
              .. "not restarting it (the next command will; see :checkhealth cairn)", tostring(code),
              tostring(signal), r.count), vim.log.levels.ERROR)
          end
          config.notify(string.format("the server exited (code %s, signal %s)%s; restarting", tostring(code),
            tostring(signal), why), vim.log.levels.WARN)
          M.restart(root)
        end
      end)
    end,
  }
end

local function start_client(cfg)
  if vim.lsp.start_client and vim.fn.has("nvim-0.11") == 0 then
    return vim.lsp.start_client(cfg)
  end
  return vim.lsp.start(cfg, { attach = false })
end

--- The message for a server program that cannot be run.
function M.missing_message(program)
  -- the program's name first: a message cut to fit one line still says which program is missing
  local path = tostring(program or "cairn")
  return string.format("cairn not found: %s (%s): install it or set `cmd` in require(\"cairn\").setup "
    .. "(see :checkhealth cairn)", vim.fn.fnamemodify(path, ":t"), path)
end

--- The client id of `root`'s server, starting it when none runs (nil when it cannot start; then the
--- reason, and true when the program is missing).
function M.ensure(root)
  config.last_root = root
  local client = M.client_of_root(root)
  if client then
    return client.id
  end
  local program = config.opts.cmd and config.opts.cmd[1]
  if type(program) ~= "string" or vim.fn.executable(program) ~= 1 then
    return nil, M.missing_message(program), true
  end
  log_offsets[root] = log_size()
  require("cairn.idle").start()
  local ok, id = pcall(start_client, client_config(root))
  if not ok or not id then
    return nil, string.format("could not start %s: is cairn installed? see :checkhealth cairn",
      table.concat(config.opts.cmd, " "))
  end
  M.clients[root] = id
  return id
end

--- Call `fn(client)` once `root`'s server is initialized (starting it when
--- needed); `fn(nil, reason)` when it cannot start.
function M.with_client(root, fn)
  local id, reason = M.ensure(root)
  if not id then
    return fn(nil, reason)
  end
  local client = vim.lsp.get_client_by_id(id)
  if client and client.initialized then
    return fn(client)
  end
  waiting[root] = waiting[root] or {}
  table.insert(waiting[root], fn)
end

--- The initialized client of `root`, waiting up to `timeout` ms (for completion); nil otherwise.
function M.client_sync(root, timeout)
  local id = M.ensure(root)
  if not id then
    return nil
  end
  vim.wait(timeout or config.opts.start_timeout, function()
    local c = vim.lsp.get_client_by_id(id)
    return c == nil or c.initialized
  end, 20)
  local c = vim.lsp.get_client_by_id(id)
  return (c and c.initialized) and c or nil
end

--- Attach `bufnr` to the cairn server of `root`, starting it when needed.
--- A missing program is reported once per session (not for every memory file), after the autocommand
--- that opened the file (no "Error detected while processing" around it).
function M.attach(bufnr, root)
  local id, reason, missing = M.ensure(root)
  if id then
    vim.lsp.buf_attach_client(bufnr, id)
  elseif not missing or not missing_reported[reason] then
    if missing then
      missing_reported[reason] = true
    end
    vim.schedule(function()
      config.notify(reason, vim.log.levels.ERROR)
    end)
  end
  return id
end

--- Every running, initialized cairn client.
function M.running()
  local out = {}
  for root in pairs(M.clients) do
    local client = M.client_of_root(root)
    if client and client.initialized then
      table.insert(out, client)
    end
  end
  return out
end

--- Re-attach the loaded memory buffers under `root` (starting the server).
function M.restart(root)
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    local path = vim.api.nvim_buf_get_name(buf)
    if vim.api.nvim_buf_is_loaded(buf) and path ~= "" and config.is_memory_file(path)
        and config.root_of(path) == root then
      M.attach(buf, root)
    end
  end
end

--- Send a request to the server of `root` (started when needed); `on_result(err, result)`.
function M.request(root, method, params, on_result)
  M.with_client(root, function(client, reason)
    if not client then
      return on_result({ message = tostring(reason) }, nil)
    end
    params.workspace = params.workspace or client.config.root_dir
    call(client, "request", method, params, function(err, result)
      on_result(err, result)
    end, 0)
  end)
  return true
end

--- Send a notification to the server of `root` (started when needed).
function M.notify(root, method, params)
  M.with_client(root, function(client)
    if client then
      params.workspace = params.workspace or client.config.root_dir
      call(client, "notify", method, params)
    end
  end)
  return true
end

--- Send changed settings to every running server: `settings` replaces the
--- editor's settings; a key set before and absent now (or vim.NIL) is sent
--- as null, so the config files' value applies again.
function M.change_settings(settings)
  local change, now = {}, {}
  for k, v in pairs(settings or {}) do
    if v ~= vim.NIL then
      now[k] = v
      change[k] = v
    end
  end
  for k, v in pairs(settings or {}) do
    if v == vim.NIL then
      change[k] = vim.NIL
    end
  end
  for k in pairs(editor_settings) do
    if now[k] == nil then
      change[k] = vim.NIL
    end
  end
  editor_settings = vim.deepcopy(now)
  for root in pairs(M.clients) do
    local client = M.client_of_root(root)
    if client then
      -- later restarts start from the new settings
      client.config.init_options = next(now) and vim.deepcopy(now) or vim.empty_dict()
      client.config.settings = { cairn = next(now) and vim.deepcopy(now) or vim.empty_dict() }
      call(client, "notify", "workspace/didChangeConfiguration",
        { settings = { cairn = next(change) and change or vim.empty_dict() } })
      vim.defer_fn(function()
        changed(root)
      end, 0)
    end
  end
  return change
end

return M
