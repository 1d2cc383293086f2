-- cairn: options and workspace roots (no Neovim state besides the options).
local M = {}

M.defaults = {
  cmd = { "cairn", "serve" },
  cmd_env = nil, -- extra environment for the server process
  -- the workspace is the nearest directory above the current file (else the
  -- current directory) holding one of these; without any, the current directory
  root_markers = { ".git", ".cairn", ".agents" },
  -- server settings (names as in the cairn LSP contract): only what you set
  -- is sent, so the workspace's .cairn/config.toml and your cairn config
  -- apply otherwise (e.g. { mode = "auto", idleMinutes = 5 })
  settings = {},
  -- files opened as memory files besides .agents/memory/*.md and MEMORY.md
  -- (the server's instruction files come from `settings.instructionFiles`)
  instruction_files = { "AGENTS.md", "CLAUDE.md" },
  -- ms to wait for a server to start before a command gives up
  start_timeout = 15000,
}

M.opts = vim.deepcopy(M.defaults)
local root_cache = {} -- bufnr -> { key = name and cwd, root }
M.last_root = nil -- the workspace whose server was used last (for buffers without a file)

--- Replace the options with the defaults extended by `user_opts`.
function M.set(user_opts)
  user_opts = user_opts or {}
  root_cache = {} -- the markers may have changed
  local settings = {}
  for k, v in pairs(user_opts.settings or {}) do
    if v ~= vim.NIL then -- vim.NIL: unset (see :help cairn-unset)
      settings[k] = v
    end
  end
  local rest = {}
  for k, v in pairs(user_opts) do
    if k ~= "settings" then
      rest[k] = v
    end
  end
  M.opts = vim.tbl_deep_extend("force", vim.deepcopy(M.defaults), rest)
  M.opts.settings = vim.deepcopy(settings)
  return M.opts
end

--- True for `.agents/memory/*.md`, any `MEMORY.md` and the instruction files.
function M.is_memory_file(path)
  if path:match("/%.agents/memory/[^/]+%.md$") or path:match("/MEMORY%.md$") then
    return true
  end
  local name = vim.fn.fnamemodify(path, ":t")
  local files = M.opts.settings.instructionFiles
  if type(files) ~= "table" then
    files = M.opts.instruction_files or {}
  end
  return vim.tbl_contains(files, name)
end

local function marked(dir)
  for _, marker in ipairs(M.opts.root_markers) do
    if vim.loop.fs_stat(dir .. "/" .. marker) then
      return true
    end
  end
  return false
end

--- The workspace root for `path` (a file or directory; nil or "": the
--- current directory): the nearest directory above it holding a root marker;
--- without one the memory file's own directory (AGENTS.md marks its
--- workspace), else the current directory, or the file's own directory when
--- the file lies outside the current directory.
function M.root_of(path)
  local cwd = vim.loop.cwd()
  local start = cwd
  if path and path ~= "" then
    start = vim.fn.isdirectory(path) == 1 and vim.fn.fnamemodify(path, ":p") or vim.fn.fnamemodify(path, ":p:h")
    start = start:gsub("/+$", "")
    if start == "" then
      start = "/"
    end
  end
  local dir = start
  while true do
    if marked(dir) then
      return dir
    end
    local parent = vim.fn.fnamemodify(dir, ":h")
    if parent == dir then
      break
    end
    dir = parent
  end
  if path and path ~= "" and vim.fn.isdirectory(path) == 0 and M.is_memory_file(path) then
    return start -- an instruction file (AGENTS.md) marks its own directory
  end
  if start == cwd or start:sub(1, #cwd + 1) == cwd .. "/" then
    return cwd
  end
  return start
end

--- The workspace root of buffer `bufnr` (0 or nil: the current buffer).
function M.root_of_buf(bufnr)
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  local ok, root = pcall(vim.api.nvim_buf_get_var, bufnr, "cairn_root")
  if ok and type(root) == "string" then
    return root -- cairn's own buffers (cockpit, edit, diff) belong to their workspace
  end
  local name = vim.api.nvim_buf_get_name(bufnr)
  if name:match("^%a[%w+.-]*://") then
    name = "" -- a URI-named scratch buffer
  end
  if name == "" and M.last_root then
    return M.last_root -- a buffer without a file: the workspace used last
  end
  -- cached per buffer (the statusline asks on every redraw): same name, same cwd, same answer
  local key = name .. "\0" .. (vim.loop.cwd() or "")
  local hit = root_cache[bufnr]
  if hit and hit.key == key then
    return hit.root
  end
  local root = M.root_of(name)
  root_cache[bufnr] = { key = key, root = root }
  return root
end

function M.notify(msg, level)
  vim.notify("cairn: " .. msg, level or vim.log.levels.INFO)
end

--- A person's message for an LSP error (its message carries the fixed code first). A proposal
--- refused as stale only because memory now says otherwise on its subject (E_PROPOSAL_STALE)
--- ends "(to keep both: accept --keep-both)", the CLI's flag: in Neovim that is K in the cockpit.
function M.error_text(err)
  local text
  if type(err) == "table" then
    text = tostring(err.message or vim.inspect(err))
  else
    text = tostring(err)
  end
  if text:find("^E_PROPOSAL_STALE") and text:find("accept --keep-both", 1, true) then
    text = text:gsub("accept %-%-keep%-both", "K in the cockpit (:Cairn)")
  end
  return text
end

return M
