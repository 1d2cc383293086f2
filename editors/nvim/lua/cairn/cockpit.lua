-- cairn: the cockpit buffer (:Cairn), the diff buffer and the edit-before-accept buffer.
local config = require("cairn.config")
local lsp = require("cairn.lsp")
local commands = require("cairn.commands")

local M = {}

M.views = { "pending", "history", "journal", "jobs", "memories" }
local TITLES = { pending = "Pending", history = "History (newest first)", journal = "Journal", jobs = "Jobs",
  memories = "Memories" }
local buffers = {} -- buf -> { root, view, rows = { [line] = row }, state }

M.keys = {
  { "a", "accept" }, { "K", "accept keeping both" },
  { "r", "reject" }, { "e", "edit, then accept" }, { "u", "undo/take back" }, { "<CR>", "diff" },
  { "P", "pending" }, { "H", "history" }, { "L", "journal" }, { "J", "jobs" }, { "M", "memories" },
  { "R", "refresh" }, { "D", "drain" }, { "V", "verify" }, { "q", "quit" }, { "?", "help" },
}
--- The keys of the Memories view, where they act on the topic of the line.
M.memory_keys = { { "<CR>", "visit" }, { "e", "visit (update by hand)" }, { "c", "confirm" }, { "r", "retire" },
  { "V", "verify" } }

--- The keys of `view` as its header and `?` list them: "KEY what".
function M.view_keys(view)
  local keys = {}
  for _, k in ipairs(view == "memories" and M.memory_keys or M.keys) do
    table.insert(keys, k[1] .. " " .. k[2])
  end
  if view == "memories" then
    table.insert(keys, "P/H/L/J views")
  end
  return keys
end

-- The buffer named exactly `name`, or nil.
local function find_buf(name)
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_get_name(buf) == name then
      return buf
    end
  end
end
M.find_buf = find_buf

local function err_notify(err)
  config.notify(config.error_text(err), vim.log.levels.ERROR)
end

-- Display columns of `text` (a wide character counts 2, a multibyte one 1).
local strwidth = vim.api.nvim_strwidth

local ELLIPSIS = "…"

-- The characters of `text`, each a string (a multibyte character is never split).
local function chars(text)
  return vim.fn.split(text, "\\zs")
end

-- The start of `text` that fits in `cols` display columns, without trailing spaces.
local function head(text, cols)
  local out, w = {}, 0
  for _, ch in ipairs(chars(text)) do
    w = w + strwidth(ch)
    if w > cols then
      break
    end
    table.insert(out, ch)
  end
  return (table.concat(out):gsub("%s+$", ""))
end

-- The end of `text` that fits in `cols` display columns, without leading spaces.
local function tail(text, cols)
  local cs, out, w = chars(text), {}, 0
  for i = #cs, 1, -1 do
    w = w + strwidth(cs[i])
    if w > cols then
      break
    end
    table.insert(out, 1, cs[i])
  end
  return (table.concat(out):gsub("^%s+", ""))
end

--- `text` cut to `cols` display columns with … in the middle: its start (what it is, and the
--- sort order stays readable) and its end (where names made of the same words differ, and where
--- the server puts the -2 of a name that was taken).  With `from`, the index (0-based, in
--- characters) where `text` differs from another text the middle cut made alike, a short start
--- is followed by the text from the start of that character's word on (with a second … when its end
--- does not fit).
function M.cut(text, cols, from)
  text = tostring(text or "")
  if strwidth(text) <= cols then
    return text
  end
  local ew = strwidth(ELLIPSIS)
  if cols < 4 + ew then
    return head(text, cols - ew) .. ELLIPSIS
  end
  local room = cols - ew
  if not from then
    local h = head(text, room - math.floor(room / 2))
    return h .. ELLIPSIS .. tail(text, room - strwidth(h))
  end
  local h = head(text, math.max(1, math.floor(room / 3)))
  local rest = room - strwidth(h)
  local t = tail(text, rest)
  local cs = chars(text)
  if from >= #cs - #chars(t) then
    return h .. ELLIPSIS .. t
  end
  -- from the start of the word that differs, while the character that differs still shows
  local start = math.max(from, #chars(h))
  while start > #chars(h) and from - start < rest - ew - 2 and cs[start]:match("^%w$") do
    start = start - 1
  end
  return h .. ELLIPSIS .. head(table.concat(cs, "", start + 1), rest - ew) .. ELLIPSIS
end

-- How many characters `a` and `b` share at their start.
local function common_prefix(a, b)
  local ca, cb = chars(a), chars(b)
  local n = 0
  while n < #ca and n < #cb and ca[n + 1] == cb[n + 1] do
    n = n + 1
  end
  return n
end

--- Each of `texts` cut to `cols` display columns (`M.cut`), different texts kept apart: a table
--- TEXT -> SHOWN.  Texts the middle cut leaves alike are cut again around where they differ.
function M.cut_distinct(texts, cols)
  local first, order = {}, {}
  for _, text in ipairs(texts) do
    text = tostring(text or "")
    if first[text] == nil then
      first[text] = M.cut(text, cols)
      table.insert(order, text)
    end
  end
  local out = {}
  for _, text in ipairs(order) do
    local from
    for _, other in ipairs(order) do
      if other ~= text and first[other] == first[text] then
        from = math.max(from or 0, common_prefix(text, other))
      end
    end
    out[text] = from and M.cut(text, cols, from) or first[text]
  end
  return out
end

-- `text` on one line in exactly `width` display columns: cut (… at its end) or padded.
local function clip(text, width)
  text = tostring(text or ""):gsub("[%c]", " ")
  if strwidth(text) > width then
    text = head(text, width - strwidth(ELLIPSIS)) .. ELLIPSIS
  end
  return text .. string.rep(" ", width - strwidth(text))
end

-- A time for display: epoch seconds or an ISO 8601 text, as "YYYY-MM-DD HH:MM" (UTC).
local function when(value)
  if type(value) == "number" then
    return os.date("!%Y-%m-%d %H:%M", math.floor(value))
  end
  return (tostring(value or ""):gsub("T", " "):sub(1, 16))
end

local function base(path)
  return vim.fn.fnamemodify(tostring(path or ""), ":t")
end

-- The Target column's width (Pending, History).
local TARGET_WIDTH = 24
-- Columns of a Memories line besides the name and the description: type, age, fresh, separators.
local MEMORY_FIXED = 1 + 10 + 1 + 5 + 1 + 5 + 2

local function topic_name(row)
  return vim.fn.fnamemodify(tostring(row.file or ""), ":t")
end

-- What the lines of `rows` in `view` share at `cols` display columns: the cut names (Memories) or
-- targets (Pending, History), each column kept apart (`M.cut_distinct`), and the Name column's width:
-- the longest name, at most half of what the type, age and fresh columns leave.
local function layout(view, rows, cols)
  local ctx = {}
  if view == "memories" then
    local names, longest = {}, 1
    for _, row in ipairs(rows) do
      local name = (topic_name(row):gsub("[%c]", " "))
      table.insert(names, name)
      longest = math.max(longest, strwidth(name))
    end
    ctx.name_width = math.min(longest, math.max(16, math.floor((cols - MEMORY_FIXED) / 2)))
    ctx.names = M.cut_distinct(names, ctx.name_width)
  elseif view == "pending" or view == "history" then
    ctx.targets = M.cut_distinct(vim.tbl_map(function(row) return (base(row.target):gsub("[%c]", " ")) end, rows),
      TARGET_WIDTH)
  end
  return ctx
end

-- The cell of `text` in a column cut by `layout` (`shown`: TEXT -> SHOWN), `width` columns wide.
local function cell(shown, text, width)
  text = (tostring(text or ""):gsub("[%c]", " "))
  return clip(shown and shown[text] or text, width)
end

local function line_of_row(view, row, ctx)
  if view == "pending" then
    return string.format("%s  %s %s %s  %s", clip(row.id, 14), clip(row.state, 8), clip(row.kind, 11),
      cell(ctx.targets, base(row.target), TARGET_WIDTH), tostring(row.title or ""):gsub("[%c]", " "))
  elseif view == "history" then
    return string.format("%s  %s  %s %s  %s%s", clip(when(row.decided), 16), clip(row.id, 14),
      clip(row.state, 8), cell(ctx.targets, base(row.target), TARGET_WIDTH),
      tostring(row.title or ""):gsub("[%c]", " "),
      (commands.undoable(row) and "  (u: undo)") or (row.canUnreject and "  (u: take back)")
        or (row.canAccept and "  (a: accept again)") or "")
  elseif view == "journal" then
    local notes = type(row.notes) == "table" and #row.notes or 0
    return string.format("%s  %s %s %3d note%s  %s", clip(when(row.created), 16),
      clip(row.trigger, 12), clip(row.session_id, 24), notes, notes == 1 and " " or "s", tostring(row.id or ""))
  elseif view == "jobs" then
    return string.format("%s  %s %s %d attempt%s  %s%s", clip(row.id, 14), clip(row.kind, 12), clip(row.state, 10),
      tonumber(row.attempts) or 0, (tonumber(row.attempts) or 0) == 1 and " " or "s",
      row.lastError and ("error " .. tostring(row.lastError) .. " ") or "", row.waiting and ("(" .. row.waiting .. ")") or "")
  else
    local name = cell(ctx.names, topic_name(row), ctx.name_width or 36)
    if type(row.error) == "string" then -- front matter the user broke: reported, never rewritten
      -- in the Description column, as the other topics' descriptions
      return string.format("%s %s %s %s  %s: front matter cannot be read; fix it by hand", name, clip("", 10),
        clip("", 5), clip("", 5), (row.error:gsub("[%c]", " ")))
    end
    local age = tonumber(row.age)
    local fresh = row.stale == true and "stale" or (row.due == true and "due" or "")
    local why = ""
    if row.stale == true and type(row.why) == "table" and row.why[1] ~= nil then
      why = "  (stale: " .. table.concat(vim.tbl_map(tostring, row.why), "; ") .. ")"
    end
    return string.format("%s %s %s %s  %s%s", name, clip(row.type ~= vim.NIL and row.type or "", 10),
      clip(age and (tostring(math.floor(age)) .. "d") or "-", 5), clip(fresh, 5),
      (tostring(row.description or ""):gsub("[%c]", " ")), (why:gsub("[%c]", " ")))
  end
end

local EMPTY = {
  pending = "No pending proposals. D drains the backlog; :CairnRemember {text} adds one.",
  history = "No decisions yet: a accepts a pending proposal (P).",
  journal = "No digests yet: D drains the backlog into the journal.",
  jobs = "No jobs waiting, running or failed.",
  memories = "No memory topics yet.",
}

local function set_lines(buf, lines)
  vim.bo[buf].modifiable = true
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  vim.bo[buf].modified = false
end

-- `items` joined by two spaces into lines of at most `cols` display columns (an item is never split).
local function wrap(items, cols)
  local lines, line = {}, nil
  for _, item in ipairs(items) do
    if line and strwidth(line .. "  " .. item) > cols then
      table.insert(lines, line)
      line = nil
    end
    line = line and (line .. "  " .. item) or item
  end
  table.insert(lines, line or "")
  return lines
end

-- The display columns of the window showing cockpit `buf` (the editor's width when none does).
local function cols_of(buf)
  local win = vim.fn.win_findbuf(buf)[1]
  return win and vim.api.nvim_win_get_width(win) or vim.o.columns
end

local function header(st, view, root, state, cols)
  local counts = ""
  local status = require("cairn.status").last[root]
  if status then
    counts = string.format("  %s mode  %d pending", tostring(status.mode or "?"), tonumber(status.proposals) or 0)
    if status.provider == "extractive" then -- said once, here: not a nag on every command
      counts = counts .. "  · embedded engine (cairn setup for better recall)"
    end
    local unwired = tonumber(status.unwiredAgents) or 0
    if unwired > 0 then
      counts = counts .. string.format("  · %d agent%s not reading the memory (cairn agents wire)", unwired,
        unwired == 1 and "" or "s")
    end
  end
  -- the keys wrapped to the window: at 80 columns every key shows, ? and q too
  local lines = { string.format("cairn [%s] %s%s", TITLES[view], state or "", counts), vim.fn.fnamemodify(root, ":~") }
  vim.list_extend(lines, wrap(M.view_keys(view), cols))
  table.insert(lines, "")
  return lines
end
M.HEADER_LINES = 4 -- the fewest header lines: the keys take more in a narrow window

-- Draw `buf` from its rows.
local function draw(buf)
  local st = buffers[buf]
  if not st or not vim.api.nvim_buf_is_valid(buf) then
    return
  end
  local cols = cols_of(buf)
  local lines = header(st, st.view, st.root, st.state, cols)
  local first_row = #lines + 1
  local ctx = layout(st.view, st.rows or {}, cols)
  st.by_line = {}
  if st.error then
    table.insert(lines, "error: " .. st.error)
  elseif st.rows and #st.rows == 0 then
    table.insert(lines, EMPTY[st.view])
  end
  for _, row in ipairs(st.rows or {}) do
    table.insert(lines, line_of_row(st.view, row, ctx))
    st.by_line[#lines] = row
  end
  local cursor = {}
  for _, win in ipairs(vim.api.nvim_list_wins()) do
    if vim.api.nvim_win_get_buf(win) == buf then
      cursor[win] = vim.api.nvim_win_get_cursor(win)
    end
  end
  set_lines(buf, lines)
  for win, pos in pairs(cursor) do
    local line = math.max(math.min(pos[1], #lines), math.min(first_row, #lines))
    pcall(vim.api.nvim_win_set_cursor, win, { line, 0 })
  end
end

local REQUESTS = {
  pending = { "cairn/cockpit", { view = "candidates" } },
  history = { "cairn/cockpit", { view = "history" } },
  memories = { "cairn/cockpit", { view = "memories" } },
  journal = { "cairn/journal", {} },
  jobs = { "cairn/jobs", {} },
}

--- Ask the server for `buf`'s view again and redraw it; `on_done()` after.
function M.refresh(buf, on_done)
  local st = buffers[buf]
  if not st then
    return
  end
  local req = REQUESTS[st.view]
  st.state = "refreshing"
  local view = st.view
  lsp.request(st.root, req[1], vim.deepcopy(req[2]), function(err, result)
    if not buffers[buf] or buffers[buf].view ~= view then
      return
    end
    st.state, st.error = "", nil
    if err then
      st.error, st.rows = config.error_text(err), {}
    elseif view == "jobs" then
      local rows = {}
      for _, job in ipairs(type(result) == "table" and result.jobs or {}) do
        if job.workspace == nil or job.workspace == st.root then
          table.insert(rows, job)
        end
      end
      st.rows = rows
    else
      st.rows = commands.sort_rows(view == "history" and "history" or view, result or {})
    end
    draw(buf)
    if on_done then
      on_done()
    end
  end)
end

--- Refresh every cockpit of `root` (the server said it changed).
function M.refresh_root(root)
  for buf, st in pairs(buffers) do
    if st.root == root and vim.api.nvim_buf_is_valid(buf) then
      M.refresh(buf)
    elseif not vim.api.nvim_buf_is_valid(buf) then
      buffers[buf] = nil
    end
  end
end

--- The row under the cursor of the cockpit, or nil.
function M.row_at_cursor(buf)
  buf = buf or vim.api.nvim_get_current_buf()
  local st = buffers[buf]
  if not st or not st.by_line then
    return nil
  end
  return st.by_line[vim.api.nvim_win_get_cursor(0)[1]]
end

local function proposal_row(buf, views)
  local st = buffers[buf]
  local row = M.row_at_cursor(buf)
  if not row or not vim.tbl_contains(views, st.view) then
    config.notify("no proposal on this line" .. (st.view ~= "pending" and " (P lists the pending ones)" or ""))
    return nil
  end
  return row
end

-- The memory topic on the cursor's line of the Memories view, or nil (said why).
local function topic_row(buf)
  local row = M.row_at_cursor(buf)
  if not row or type(row.file) ~= "string" then
    config.notify("no memory topic on this line")
    return nil
  end
  return row
end

-- Visit the file of the topic on the cursor's line (an update by hand).
local function visit_topic(buf)
  local row = topic_row(buf)
  if row then
    local path = row.file:sub(1, 1) == "/" and row.file or (buffers[buf].root .. "/" .. row.file)
    vim.cmd("edit " .. vim.fn.fnameescape(path))
  end
end

--- Switch `buf` to `view` and refresh it.
function M.set_view(buf, view, on_done)
  local st = buffers[buf]
  st.view, st.rows, st.error = view, nil, nil
  vim.api.nvim_buf_set_var(buf, "cairn_view", view)
  draw(buf)
  M.refresh(buf, on_done)
end

local function map(buf, lhs, fn)
  vim.keymap.set("n", lhs, fn, { buffer = buf, nowait = true, silent = true })
end

local function keymaps(buf)
  map(buf, "a", function()
    local row = proposal_row(buf, { "pending", "history" })
    if not row then
      return
    end
    if buffers[buf].view == "history" and not row.canAccept then
      return config.notify(row.id .. " cannot be accepted from this line (" .. tostring(row.state) .. ")")
    end
    commands.decide(buffers[buf].root, "accept", { row.id })
  end)
  map(buf, "K", function()
    local row = proposal_row(buf, { "pending" })
    if row then
      commands.decide(buffers[buf].root, "accept", { row.id }, nil, true)
    end
  end)
  map(buf, "r", function()
    if buffers[buf].view == "memories" then
      local topic = topic_row(buf)
      return topic and commands.retire_topic(buffers[buf].root, topic)
    end
    local row = proposal_row(buf, { "pending" })
    if row then
      commands.confirm_reject({ row }, function()
        commands.decide(buffers[buf].root, "reject", { row.id })
      end)
    end
  end)
  map(buf, "e", function()
    if buffers[buf].view == "memories" then
      return visit_topic(buf)
    end
    local row = proposal_row(buf, { "pending" })
    if row then
      M.edit(buffers[buf].root, row.id)
    end
  end)
  map(buf, "u", function()
    local st = buffers[buf]
    if st.view == "memories" then
      return config.notify("u undoes a decision: H lists them (here: c confirms a topic, r retires it, e visits it)")
    end
    if st.view ~= "history" then
      return commands.undo({ args = "" })
    end
    local row = proposal_row(buf, { "history" })
    if not row then
      return
    end
    if row.canUnreject then
      return commands.confirm_unreject(row, function()
        commands.decide(st.root, "unreject", { row.id })
      end)
    end
    if not commands.undoable(row) then
      return config.notify(row.id .. " cannot be undone from this line (" .. tostring(row.state) .. ")")
    end
    commands.confirm_undo(row, function()
      commands.decide(st.root, "undo", { row.id })
    end)
  end)
  map(buf, "<CR>", function()
    if buffers[buf].view == "memories" then
      return visit_topic(buf)
    end
    local row = proposal_row(buf, { "pending", "history" })
    if row then
      lsp.request(buffers[buf].root, "cairn/proposal", { id = row.id }, function(err, result)
        if err then
          return err_notify(err)
        end
        M.show_diff(result, buffers[buf].root)
      end)
    end
  end)
  local views = { P = "pending", H = "history", L = "journal", J = "jobs", M = "memories" }
  for key, view in pairs(views) do
    map(buf, key, function()
      M.set_view(buf, view)
    end)
  end
  map(buf, "R", function()
    M.refresh(buf)
  end)
  map(buf, "V", function()
    commands.verify(buffers[buf].root)
  end)
  map(buf, "c", function()
    if buffers[buf].view ~= "memories" then
      return config.notify("c confirms a memory topic: M lists them")
    end
    local topic = topic_row(buf)
    if topic then
      commands.confirm_topic(buffers[buf].root, topic)
    end
  end)
  map(buf, "D", function()
    commands.execute(buffers[buf].root, "cairn.drainBacklog", {}, function(err)
      if err then
        err_notify(err)
      end
    end)
  end)
  map(buf, "q", function()
    if #vim.api.nvim_list_wins() > 1 then
      vim.cmd("close")
    else
      vim.cmd("bprevious")
    end
  end)
  map(buf, "?", function()
    config.notify(table.concat(M.view_keys(buffers[buf].view), ", "))
  end)
end

local resize_group
-- Redraw the cockpits shown when the editor is resized: their keys and columns follow its width.
-- Set up when the first cockpit opens, once.
local function watch_resize()
  if resize_group then
    return
  end
  resize_group = vim.api.nvim_create_augroup("cairn-cockpit-resize", { clear = true })
  vim.api.nvim_create_autocmd("VimResized", { group = resize_group, callback = function()
    for buf, _ in pairs(buffers) do
      if vim.api.nvim_buf_is_valid(buf) and #vim.fn.win_findbuf(buf) > 0 then
        draw(buf)
      end
    end
  end })
end

--- Open the cockpit of workspace `root` (nil: the current buffer's) on `view`
--- ("pending" unless given); `on_done(buf)` once its rows are drawn.
function M.open(root, view, on_done)
  root = root or config.root_of_buf(0)
  view = view or "pending"
  if view == "candidates" then
    view = "pending"
  end
  if not TITLES[view] then
    return config.notify("unknown cockpit view " .. view .. " (" .. table.concat(M.views, ", ") .. ")",
      vim.log.levels.ERROR)
  end
  local name = "cairn://cockpit" .. root
  local buf = find_buf(name)
  if not buf or not buffers[buf] then
    buf = vim.api.nvim_create_buf(true, true)
    vim.api.nvim_buf_set_name(buf, name)
    vim.bo[buf].buftype = "nofile"
    vim.bo[buf].bufhidden = "hide"
    vim.bo[buf].swapfile = false
    vim.bo[buf].filetype = "cairn"
    vim.api.nvim_buf_set_var(buf, "cairn_root", root)
    buffers[buf] = { root = root, view = view }
    keymaps(buf)
    watch_resize()
    -- back in the cockpit: show what changed meanwhile (the command line, another editor)
    vim.api.nvim_create_autocmd("BufEnter", { buffer = buf, callback = function()
      if buffers[buf] and buffers[buf].rows then
        M.refresh(buf)
      end
    end })
  end
  vim.api.nvim_set_current_buf(buf)
  vim.wo.wrap = false
  M.set_view(buf, view, function()
    if on_done then
      on_done(buf)
    end
  end)
  return buf
end

local function scratch(name, root, lines, filetype)
  local existing = find_buf(name)
  if existing then
    vim.api.nvim_buf_delete(existing, { force = true })
  end
  vim.cmd("new")
  local buf = vim.api.nvim_get_current_buf()
  vim.api.nvim_buf_set_name(buf, name)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].swapfile = false
  vim.bo[buf].filetype = filetype
  vim.api.nvim_buf_set_var(buf, "cairn_root", root)
  return buf
end

--- Show a cairn/proposal answer's diff in a `cairn://proposal/ID` buffer.
function M.show_diff(result, root)
  if type(result) ~= "table" or type(result.diff) ~= "string" then
    return
  end
  local buf = scratch("cairn://proposal/" .. tostring(result.id or "?"), root or config.root_of_buf(0),
    vim.split(result.diff, "\n", { plain = true }), "diff")
  vim.bo[buf].buftype = "nofile"
  vim.bo[buf].bufhidden = "wipe"
  vim.bo[buf].modifiable = false
  return buf
end

-- Edit buffers: buf -> { seq = the last check sent, timer = the debounce timer }
local edits = {}
M.CHECK_DELAY = 300 -- ms without a change before the edit buffer is checked again
M.check_ns = vim.api.nvim_create_namespace("cairn-edit-check") -- the diagnostics of the check
M.index_ns = vim.api.nvim_create_namespace("cairn-edit-index") -- the index lines shown

local function one_line(value)
  return (tostring(value):gsub("[%c]", " "))
end

local function present(value)
  return value ~= nil and value ~= vim.NIL
end

--- The index lines an accept of the edited text writes, as shown in the edit
--- buffer: "MEMORY.md: - [Name](file.md) - description" for an entry
--- written, "MEMORY.md: removes - …" for one removed; unchanged ones are left out.
function M.index_lines(index)
  local out = {}
  for _, e in ipairs(type(index) == "table" and index or {}) do
    local before, after = present(e.before) and e.before or nil, present(e.after) and e.after or nil
    if before ~= after then
      local where = base(e.index)
      table.insert(out, where .. ": " .. (after and one_line(after) or ("removes " .. one_line(before))))
    end
  end
  return out
end

-- Show `index` (the index lines the accept writes) at the end of the edit buffer's first line.
local function show_index(buf, index)
  if not vim.api.nvim_buf_is_valid(buf) then
    return
  end
  local lines = M.index_lines(index)
  vim.api.nvim_buf_clear_namespace(buf, M.index_ns, 0, -1)
  vim.api.nvim_buf_set_var(buf, "cairn_index", lines)
  if #lines > 0 then
    vim.api.nvim_buf_set_extmark(buf, M.index_ns, 0, 0, {
      virt_text = { { "  " .. table.concat(lines, "  |  "), "Comment" } },
      virt_text_pos = "eol",
    })
  end
end

local function edit_text(buf)
  return table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n") .. (vim.bo[buf].eol and "\n" or "")
end

--- Check the text of edit buffer `buf` (proposal `id` of `root`) as the
--- accept would (`cairn/checkEdited`, asynchronous): its problems become
--- diagnostics (code E_TOPIC_FRONT_MATTER on the line of broken front
--- matter), its index lines are shown.  An answer to an older text is dropped.
function M.check_edit(buf, root, id)
  local st = edits[buf]
  if not st or not vim.api.nvim_buf_is_valid(buf) then
    return
  end
  st.seq = st.seq + 1
  local seq = st.seq
  lsp.request(root, "cairn/checkEdited", { id = id, text = edit_text(buf) }, function(err, result)
    if edits[buf] ~= st or st.seq ~= seq or not vim.api.nvim_buf_is_valid(buf) then
      return
    end
    local diagnostics = {}
    if err then
      table.insert(diagnostics, { lnum = 0, col = 0, severity = vim.diagnostic.severity.WARN, source = "cairn",
        message = "cairn/checkEdited: " .. config.error_text(err) })
    else
      local last = vim.api.nvim_buf_line_count(buf)
      for _, p in ipairs(type(result) == "table" and type(result.problems) == "table" and result.problems or {}) do
        local line = math.min(math.max(tonumber(p.line) or 1, 1), last)
        table.insert(diagnostics, { lnum = line - 1, col = 0, severity = vim.diagnostic.severity.ERROR,
          source = "cairn", code = p.code, message = tostring(p.code) .. ": " .. one_line(p.message or "") })
      end
      if type(result) == "table" then
        show_index(buf, result.index)
      end
    end
    vim.diagnostic.set(M.check_ns, buf, diagnostics)
    st.checked = seq
  end)
end

-- Check edit buffer `buf` again once its text stopped changing for M.CHECK_DELAY ms.
local function schedule_check(buf, root, id)
  local st = edits[buf]
  if not st then
    return
  end
  st.timer = st.timer or vim.loop.new_timer()
  st.timer:stop()
  st.timer:start(M.CHECK_DELAY, 0, vim.schedule_wrap(function()
    M.check_edit(buf, root, id)
  end))
end

local function forget_edit(buf)
  local st = edits[buf]
  edits[buf] = nil
  if st and st.timer then
    st.timer:stop()
    st.timer:close()
  end
end

--- Edit before accept: open pending proposal `id`'s new content in a
--- `cairn://edit/ID` buffer; `:w` (or `ZA`) accepts the edited text,
--- `ZQ` abandons it.  While you edit, the server checks the text as the
--- accept would (front matter problems as diagnostics) and the end of the
--- first line shows the index line the accept writes.  `on_open(buf)` once it shows.
function M.edit(root, id, on_open)
  lsp.request(root, "cairn/proposal", { id = id }, function(err, result)
    if err then
      return err_notify(err)
    end
    if type(result) ~= "table" or type(result.edit) ~= "table" then
      return config.notify(id .. " cannot be edited (it is not pending, or it writes several files): "
        .. "accept or reject it as it is", vim.log.levels.WARN)
    end
    local text = tostring(result.edit.text or "")
    local eol = text:sub(-1) == "\n"
    local lines = vim.split(eol and text:sub(1, -2) or text, "\n", { plain = true })
    local buf = scratch("cairn://edit/" .. id, root, lines, "markdown")
    vim.bo[buf].buftype = "acwrite"
    vim.bo[buf].bufhidden = "wipe"
    vim.bo[buf].eol = eol
    vim.bo[buf].modified = false
    vim.api.nvim_buf_set_var(buf, "cairn_proposal", id)
    local function submit()
      local body = edit_text(buf)
      commands.accept_edited(root, id, body, function(e)
        if not e and vim.api.nvim_buf_is_valid(buf) then
          vim.bo[buf].modified = false
          for _, win in ipairs(vim.fn.win_findbuf(buf)) do
            if #vim.api.nvim_list_wins() > 1 then
              pcall(vim.api.nvim_win_close, win, true)
            end
          end
          if vim.api.nvim_buf_is_valid(buf) then
            pcall(vim.api.nvim_buf_delete, buf, { force = true })
          end
        end
      end)
    end
    vim.api.nvim_create_autocmd("BufWriteCmd", { buffer = buf, callback = submit })
    vim.keymap.set("n", "ZA", submit, { buffer = buf, silent = true })
    -- the live check: at once, then after every change (debounced); any change, typed or by a script
    forget_edit(buf)
    edits[buf] = { seq = 0 }
    show_index(buf, result.edit.index)
    vim.api.nvim_buf_attach(buf, false, {
      on_lines = function()
        if not edits[buf] then
          return true -- detach
        end
        schedule_check(buf, root, id)
      end,
      on_detach = function()
        forget_edit(buf)
      end,
    })
    vim.api.nvim_create_autocmd("BufWipeout", { buffer = buf, callback = function()
      forget_edit(buf)
    end })
    M.check_edit(buf, root, id)
    vim.api.nvim_echo({ { string.format("cairn: editing %s (%s): :w or ZA accepts this text, ZQ abandons it", id,
      tostring(result.edit.path or "?")) } }, false, {})
    if on_open then
      on_open(buf)
    end
  end)
end

return M
