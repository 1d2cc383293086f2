-- cairn for Neovim (0.7.2 and later): start `cairn serve` for memory and
-- instruction files and expose the cairn commands.  Pending proposals then
-- appear as diagnostics, and `vim.lsp.buf.code_action()` offers accept /
-- reject / show diff on them.
--
--   require("cairn").setup({ settings = { mode = "propose", idleMinutes = 10 } })
--
-- Commands: :CairnStatus, :CairnDrain, :CairnAccept ID, :CairnReject ID,
-- :CairnUndo ID.  Drain progress arrives as $/progress.  An AI plugin feeds
-- turns with require("cairn").turn_completed{...} and ends sessions with
-- require("cairn").session_event(session_id, kind).
--
-- One server per workspace root: Neovim 0.8+ reuses it through
-- `vim.lsp.start`; on 0.7 this module keeps the root -> client id table.
local M = {}

M.defaults = {
  cmd = { "cairn", "serve" },
  cmd_env = nil, -- extra environment for the server process
  root_markers = { ".git", ".cairn", ".agents" },
  -- server settings (names as in the cairn LSP contract)
  settings = {
    mode = "propose",
    provider = "extractive",
    idleMinutes = 10,
    sealIdleMinutes = 20,
    memoryRoots = {},
    instructionFiles = { "AGENTS.md", "CLAUDE.md" },
  },
}

local opts = vim.deepcopy(M.defaults)
local clients_by_root = {} -- 0.7 only: root_dir -> client id

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
  return vim.tbl_contains(opts.settings.instructionFiles or {}, name)
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

local function need_client(bufnr)
  local client = M.client(bufnr)
  if not client then
    notify("no cairn server is running (open a memory file first)", vim.log.levels.WARN)
  end
  return client
end

local function show_diff(result)
  if type(result) ~= "table" or type(result.diff) ~= "string" then
    return
  end
  vim.cmd("new")
  local buf = vim.api.nvim_get_current_buf()
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, vim.split(result.diff, "\n", { plain = true }))
  vim.bo[buf].buftype = "nofile"
  vim.bo[buf].filetype = "diff"
  vim.bo[buf].modifiable = false
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
    if on_result then
      return on_result(err, st)
    end
    if err then
      return notify(err.message or tostring(err), vim.log.levels.ERROR)
    end
    notify(string.format("pending %d running %d retry %d attention %d exhausted %d digests %d proposals %d",
      st.pending, st.running, st.retryWaiting, st.attention, st.exhausted, st.digests, st.proposals))
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
    init_options = opts.settings,
    -- sent as workspace/didChangeConfiguration (0.8+): keep the settings under
    -- "cairn" so an empty configuration never replaces the initializationOptions
    settings = { cairn = opts.settings },
    get_language_id = function()
      return "markdown"
    end,
    handlers = {
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
    on_exit = function()
      clients_by_root[root] = nil
    end,
  }
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
  user_command("CairnAccept", function(a) M.command("cairn.accept", { ids = a.fargs }) end, { nargs = "+" })
  user_command("CairnReject", function(a) M.command("cairn.reject", { ids = a.fargs }) end, { nargs = "+" })
  user_command("CairnUndo", function(a) M.command("cairn.undo", { id = a.args }) end, { nargs = 1 })
  user_command("CairnDrain", function() M.command("cairn.drainBacklog", {}) end)
  user_command("CairnReview", function() M.command("cairn.review", {}) end)
  user_command("CairnStatus", function() M.status() end)
  user_command("CairnRemember", remember_command, { nargs = "*", range = true })
  -- Neovim has no idle timer: send cairn/idle yourself if you want idle
  -- maintenance, e.g. M.notify("cairn/idle", { seconds = 600 }) from CursorHold.
end

return M
