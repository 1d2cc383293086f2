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

-- Whether vim.notify is Neovim's own (it echoes; a notification plugin replaces it).
local function builtin_notify()
  local info = debug.getinfo(vim.notify, "S")
  local source = info and info.source or ""
  -- "@vim/_editor.lua" (built into the binary), or that file under $VIMRUNTIME/lua
  return source == "@vim/_editor.lua" or source:match("^@.*/lua/vim/_editor%.lua$") ~= nil
end

--- `text` on one line that fits `width` display cells (cut with "…" when longer).
function M.one_line(text, width)
  text = tostring(text):gsub("%s*\n%s*", "; ")
  if vim.fn.strdisplaywidth(text) <= width then
    return text, false
  end
  local n = vim.fn.strchars(text)
  local lo, hi = 0, n -- the longest prefix that fits with the ellipsis
  while lo < hi do
    local mid = math.floor((lo + hi + 1) / 2)
    if vim.fn.strdisplaywidth(vim.fn.strcharpart(text, 0, mid)) <= width - 1 then
      lo = mid
    else
      hi = mid - 1
    end
  end
  return vim.fn.strcharpart(text, 0, lo) .. "…", true
end

M.recent = {} -- the full text of the last messages (newest last), for :CairnMessages
local float -- { win, timer } of the float showing the last cut message

local function close_float()
  if float then
    pcall(function() float.timer:stop() float.timer:close() end)
    pcall(vim.api.nvim_win_close, float.win, true)
    float = nil
  end
end

-- The full text of a message cut in the echo area: a float above the command line for a few seconds.
local function show_float(text, hl)
  close_float()
  local width = math.max(20, math.min(vim.o.columns - 4, 100))
  local buf = vim.api.nvim_create_buf(false, true)
  local lines = {}
  for _, line in ipairs(vim.split(text, "\n", { plain = true })) do
    table.insert(lines, line)
  end
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].bufhidden = "wipe"
  local height = 0
  for _, line in ipairs(lines) do
    height = height + math.max(1, math.ceil(vim.fn.strdisplaywidth(line) / width))
  end
  height = math.max(1, math.min(height, math.floor(vim.o.lines / 3)))
  local ok, win = pcall(vim.api.nvim_open_win, buf, false, {
    relative = "editor", anchor = "SE", row = vim.o.lines - vim.o.cmdheight - 1, col = vim.o.columns,
    width = width, height = height, style = "minimal", border = "single", focusable = false,
    noautocmd = true,
  })
  if not ok then
    return
  end
  vim.wo[win].wrap = true
  if hl then
    vim.wo[win].winhighlight = "Normal:" .. hl
  end
  local timer = vim.loop.new_timer()
  float = { win = win, timer = timer }
  timer:start(10000, 0, vim.schedule_wrap(function()
    if float and float.win == win then
      close_float()
    end
  end))
end

-- Say `text` in the echo area on one line that fits (no "Press ENTER"): the line goes to :messages,
-- and a cut message's full text shows in a float for a few seconds (and in :CairnMessages).
local function echo_line(text, level)
  local hl = (level == vim.log.levels.ERROR and "ErrorMsg") or (level == vim.log.levels.WARN and "WarningMsg") or nil
  local width = vim.v.echospace
  if type(width) ~= "number" or width <= 0 then
    width = vim.o.columns - 12
  end
  local line, cut = M.one_line(text, math.max(10, width))
  vim.api.nvim_echo({ { line, hl } }, true, {})
  if cut then
    show_float(text, hl)
  end
end

--- Tell the user `msg` (prefixed "cairn: "). With Neovim's own vim.notify: one line in the echo area
--- that fits (see echo_line); a notification plugin's vim.notify gets the whole text.
function M.notify(msg, level)
  local text = "cairn: " .. tostring(msg)
  table.insert(M.recent, text)
  if #M.recent > 50 then
    table.remove(M.recent, 1)
  end
  if not builtin_notify() then
    return vim.notify(text, level or vim.log.levels.INFO)
  end
  if vim.in_fast_event() then
    return vim.schedule(function()
      echo_line(text, level)
    end)
  end
  echo_line(text, level)
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
